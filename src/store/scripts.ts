import { FORMAT_VERSION } from './slot-key.js';

/**
 * The Lua scripts behind the store's primitives (`backend.ts` says what each does; the in-memory
 * store mirrors them). Each names all its keys in KEYS, all in one hash slot, so each runs in a
 * Redis Cluster too. Plain `EVAL` scripts (no shebang, so Redis 6.2 runs them); a script only
 * reads (`TYPE`, `STRLEN`, `HSTRLEN`, `HMGET`, `GET`, `PTTL`) unless it decides to write, so a
 * read is served on a store at `maxmemory`. `TYPE` guards every read of a value: a key that holds
 * something else (garbage) is an answer, never a `WRONGTYPE` error. A value's size is measured
 * (`STRLEN`, `HSTRLEN`: constant time, whatever was written) before it is read, and a value over
 * {@link STORE_VALUE_MAX_BYTES} is never read: reading copies it into the script, and a 100 MB
 * value written under the prefix would hold Redis for seconds at every read.
 */

/**
 * The longest field a store value may hold. A sealed token is the token endpoint's answer (at most
 * 64 KiB, fetch-token.ts) in base64 with a nonce and a tag; anything longer was written by no
 * proxy. The scripts measure it inside Redis before reading it, so an oversized value is neither
 * copied into a script nor sent over the network nor held in the proxy's memory: a read answers
 * it as garbage, and a write replaces it.
 */
export const STORE_VALUE_MAX_BYTES = 128 * 1024;

/**
 * The error a script answers when the store user may not run `STRLEN` or `HSTRLEN` (an ACL line
 * from before values were measured): Redis's own refusal inside a script does not name the command.
 */
export const SIZE_REFUSED = 'NOPERM the store user may not run STRLEN or HSTRLEN';

/**
 * KEYS: entry, failure. Returns {entry type, exp, fp, ct, entry PTTL, failure value, failure PTTL};
 * an entry with a field over the cap is of type `oversized`, with no field, and a failure record
 * over it reads `oversized`. The sizes are asked on every read, of keys that do not exist too, so
 * a store user without `STRLEN` or `HSTRLEN` is refused at its first read, naming them.
 */
export const READ = `
local cap = ${STORE_VALUE_MAX_BYTES}
local function size(...)
  local n = redis.pcall(...)
  return type(n) == 'number' and n
end
local t = redis.call('TYPE', KEYS[1]).ok
local ft = redis.call('TYPE', KEYS[2]).ok
local e, f, c, r = 0, 0, 0, 0
if t == 'hash' or t == 'none' then
  e, f, c = size('HSTRLEN', KEYS[1], 'exp'), size('HSTRLEN', KEYS[1], 'fp'), size('HSTRLEN', KEYS[1], 'ct')
end
if ft == 'string' or ft == 'none' then r = size('STRLEN', KEYS[2]) end
if not (e and f and c and r) then return redis.error_reply('${SIZE_REFUSED}') end
local exp, fp, ct = false, false, false
if t == 'hash' then
  if e > cap or f > cap or c > cap then
    t = 'oversized'
  else
    local v = redis.call('HMGET', KEYS[1], 'exp', 'fp', 'ct')
    exp, fp, ct = v[1], v[2], v[3]
  end
end
local failure = false
if ft == 'string' then
  if r > cap then failure = 'oversized' else failure = redis.call('GET', KEYS[2]) end
end
return {t, exp, fp, ct, redis.call('PTTL', KEYS[1]), failure, redis.call('PTTL', KEYS[2])}
`;

/**
 * KEYS: entry, failure. ARGV: exp, fp, ct, ttl (ms), the ct of garbage to replace (or '').
 * Keeps a sound entry (an `exp` of digits, an `fp` and a `ct` within the cap) whose exp is as
 * late or later; returns 1 when written, 0 when kept. Reads no field before its size: only `exp`
 * (at most 20 bytes) and, when it is as long as the garbage to replace, `ct`. HSET is the first
 * write when it writes: Redis checks `maxmemory` at a script's first write only, so a store out of
 * memory refuses the write rather than let it through behind a DEL. Replacing an oversized value
 * frees it, which takes Redis what freeing that much memory takes.
 */
export const WRITE = `
local cap = ${STORE_VALUE_MAX_BYTES}
local t = redis.call('TYPE', KEYS[1]).ok
if t == 'hash' then
  local e = redis.call('HSTRLEN', KEYS[1], 'exp')
  local f = redis.call('HSTRLEN', KEYS[1], 'fp')
  local c = redis.call('HSTRLEN', KEYS[1], 'ct')
  local exp = e > 0 and e <= 20 and redis.call('HGET', KEYS[1], 'exp')
  local sound = exp and string.match(exp, '^%d+$') and f > 0 and f <= cap and c > 0 and c <= cap
  local garbage = c == #ARGV[5] and redis.call('HGET', KEYS[1], 'ct') == ARGV[5]
  if sound and tonumber(exp) >= tonumber(ARGV[1]) and not garbage then
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

/** KEYS: lease. ARGV: value. Compare and delete: 1 when it was this lease. Its size first: a value of another length is not read. */
export const RELEASE = `
if redis.call('TYPE', KEYS[1]).ok == 'string' and redis.call('STRLEN', KEYS[1]) == #ARGV[1]
  and redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
`;

/** KEYS: entry. ARGV: fingerprint. Deletes the entry only if it holds that token: 1 when deleted. Its size first, as above. */
export const DELETE_IF = `
if redis.call('TYPE', KEYS[1]).ok == 'hash' and redis.call('HSTRLEN', KEYS[1], 'fp') == #ARGV[1]
  and redis.call('HGET', KEYS[1], 'fp') == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
`;

/**
 * KEYS: failure. ARGV: limit (ms). A failure record with more time to live than the limit (the
 * longest wait the reader's own backoff could ask for) is cut to it, never lengthened: 1. Otherwise 0.
 */
export const CUT_FAILURE = `
if redis.call('PTTL', KEYS[1]) > tonumber(ARGV[1]) then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  return 1
end
return 0
`;

/**
 * The scripts as the client calls them: the command name a client defines for each (`EVAL` mode),
 * its number of keys, and its name and flags in the function library (`FCALL` mode, Redis 7+ or
 * Valkey). `no-writes` lets a read run on a store at `maxmemory`; `allow-oom` lets a delete, or a cut
 * time to live, run there.
 */
export const SCRIPTS = {
  tapRead: { keys: 2, lua: READ, name: 'read', flags: ['no-writes'] },
  tapWrite: { keys: 2, lua: WRITE, name: 'write', flags: [] },
  tapAcquire: { keys: 1, lua: ACQUIRE, name: 'acquire', flags: [] },
  tapRelease: { keys: 1, lua: RELEASE, name: 'release', flags: ['allow-oom'] },
  tapDeleteIf: { keys: 1, lua: DELETE_IF, name: 'delete_if', flags: ['allow-oom'] },
  tapCutFailure: { keys: 1, lua: CUT_FAILURE, name: 'cut_failure', flags: ['allow-oom'] },
} as const;

/** The function library's name: it carries the key format's version, so two releases never call each other's. */
export const LIBRARY_NAME = `ticket_auth_proxy_${FORMAT_VERSION}`;

/** A function's name in the library. */
export const functionName = (name: string): string => `${LIBRARY_NAME}_${name}`;

/**
 * The library's revision, beside the key format's version: raised whenever a script changes, so a
 * proxy refuses a library loaded from an earlier release (whose scripts it would otherwise trust)
 * and says to load it again. A library without one is revision 1.
 */
export const LIBRARY_REVISION = 2;

/**
 * The function that answers the library's version and revision (`{'v1', 2}`; revision 1 answered
 * the version alone): the proxy calls it on every primary before it uses the library.
 */
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
    `redis.register_function{function_name='${VERSION_FUNCTION}', flags={'no-writes'}, ` +
      `callback=function() return {'${FORMAT_VERSION}', ${LIBRARY_REVISION}} end}`,
    '',
  ].join('\n');
}
