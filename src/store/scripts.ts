import { FORMAT_VERSION } from './slot-key.js';

/**
 * The Lua scripts behind the store's primitives (`backend.ts` says what each does; the in-memory
 * store mirrors them). Each names all its keys in KEYS, all in one hash slot, so each runs in a
 * Redis Cluster too. Plain `EVAL` scripts (no shebang, so Redis 6.2 runs them); a script only
 * reads (`TYPE`, `HMGET`, `GET`, `PTTL`) unless it decides to write, so a read is served on a
 * store at `maxmemory`. `TYPE` guards every read of a value: a key that holds something else
 * (garbage) is an answer, never a `WRONGTYPE` error.
 */

/**
 * The longest field a store value may hold. A sealed token is the token endpoint's answer (at most
 * 64 KiB, fetch-token.ts) in base64 with a nonce and a tag; anything longer was written by no
 * proxy. The scripts measure it inside Redis, so an oversized value never crosses the network nor
 * takes the proxy's memory: a read answers it as garbage, and a write replaces it.
 */
export const STORE_VALUE_MAX_BYTES = 128 * 1024;

/** KEYS: entry, failure. Returns {entry type, exp, fp, ct, entry PTTL, failure value, failure PTTL}. */
export const READ = `
local t = redis.call('TYPE', KEYS[1]).ok
local exp, fp, ct = false, false, false
if t == 'hash' then
  local f = redis.call('HMGET', KEYS[1], 'exp', 'fp', 'ct')
  local cap = ${STORE_VALUE_MAX_BYTES}
  if (f[1] and #f[1] > cap) or (f[2] and #f[2] > cap) or (f[3] and #f[3] > cap) then
    t = 'oversized'
  else
    exp, fp, ct = f[1], f[2], f[3]
  end
end
local failure = false
if redis.call('TYPE', KEYS[2]).ok == 'string' then
  failure = redis.call('GET', KEYS[2])
  if #failure > ${STORE_VALUE_MAX_BYTES} then failure = 'oversized' end
end
return {t, exp, fp, ct, redis.call('PTTL', KEYS[1]), failure, redis.call('PTTL', KEYS[2])}
`;

/**
 * KEYS: entry, failure. ARGV: exp, fp, ct, ttl (ms), the ct of garbage to replace (or '').
 * Keeps a sound entry whose exp is as late or later; returns 1 when written, 0 when kept. HSET
 * is the first write when it writes: Redis checks `maxmemory` at a script's first write only, so
 * a store out of memory refuses the write rather than let it through behind a DEL.
 */
export const WRITE = `
local t = redis.call('TYPE', KEYS[1]).ok
if t == 'hash' then
  local f = redis.call('HMGET', KEYS[1], 'exp', 'fp', 'ct')
  local sound = f[1] and #f[1] <= 20 and string.match(f[1], '^%d+$') and f[2] and f[3]
    and #f[2] <= ${STORE_VALUE_MAX_BYTES} and #f[3] <= ${STORE_VALUE_MAX_BYTES}
  if sound and tonumber(f[1]) >= tonumber(ARGV[1]) and f[3] ~= ARGV[5] then
    redis.call('DEL', KEYS[2])
    return 0
  end
elseif t ~= 'none' then
  redis.call('DEL', KEYS[1])
end
redis.call('HSET', KEYS[1], 'exp', ARGV[1], 'fp', ARGV[2], 'ct', ARGV[3])
for _, field in ipairs(redis.call('HKEYS', KEYS[1])) do
  if field ~= 'exp' and field ~= 'fp' and field ~= 'ct' then redis.call('HDEL', KEYS[1], field) end
end
redis.call('PEXPIRE', KEYS[1], ARGV[4])
redis.call('DEL', KEYS[2])
return 1
`;

/**
 * KEYS: lease. ARGV: value, ttl (ms), limit (ms). 1 when taken. A lease with no time to live, or
 * more than the limit (no proxy takes one that long), is cut to this proxy's ttl, never
 * lengthened: 2. Otherwise 0.
 */
export const ACQUIRE = `
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
local left = redis.call('PTTL', KEYS[1])
if left == -1 or left > tonumber(ARGV[3]) then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 2
end
return 0
`;

/** KEYS: lease. ARGV: value. Compare and delete: 1 when it was this lease. */
export const RELEASE = `
if redis.call('TYPE', KEYS[1]).ok == 'string' and redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
`;

/** KEYS: entry. ARGV: fingerprint. Deletes the entry only if it holds that token: 1 when deleted. */
export const DELETE_IF = `
if redis.call('TYPE', KEYS[1]).ok == 'hash' and redis.call('HGET', KEYS[1], 'fp') == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
`;

/**
 * The scripts as the client calls them: the command name a client defines for each (`EVAL` mode),
 * its number of keys, and its name and flags in the function library (`FCALL` mode, Redis 7+ or
 * Valkey). `no-writes` lets a read run on a store at `maxmemory`; `allow-oom` lets a delete run there.
 */
export const SCRIPTS = {
  tapRead: { keys: 2, lua: READ, name: 'read', flags: ['no-writes'] },
  tapWrite: { keys: 2, lua: WRITE, name: 'write', flags: [] },
  tapAcquire: { keys: 1, lua: ACQUIRE, name: 'acquire', flags: [] },
  tapRelease: { keys: 1, lua: RELEASE, name: 'release', flags: ['allow-oom'] },
  tapDeleteIf: { keys: 1, lua: DELETE_IF, name: 'delete_if', flags: ['allow-oom'] },
} as const;

/** The function library's name: it carries the key format's version, so two releases never call each other's. */
export const LIBRARY_NAME = `ticket_auth_proxy_${FORMAT_VERSION}`;

/** A function's name in the library. */
export const functionName = (name: string): string => `${LIBRARY_NAME}_${name}`;

/** The function that answers the library's version: the proxy calls it to check the library is there. */
export const VERSION_FUNCTION = functionName('version');

/**
 * The scripts as one function library, for an operator to load once on every primary
 * (`FUNCTION LOAD`; `TOKEN_STORE_SCRIPTS=functions`), so the store user needs `FCALL` and no `EVAL`.
 */
export function functionLibrary(): string {
  const functions = Object.values(SCRIPTS).map(
    (s) =>
      `redis.register_function{function_name='${functionName(s.name)}', flags={${s.flags.map((f) => `'${f}'`).join(', ')}}, ` +
      `callback=function(KEYS, ARGV)${s.lua}end}`,
  );
  return [
    `#!lua name=${LIBRARY_NAME}`,
    ...functions,
    `redis.register_function{function_name='${VERSION_FUNCTION}', flags={'no-writes'}, callback=function() return '${FORMAT_VERSION}' end}`,
    '',
  ].join('\n');
}
