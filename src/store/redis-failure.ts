import { redactUserinfo } from '../core/redact.js';
import { networkFailureReason } from '../net/failure-reason.js';
import type { BackendFailure } from './backend.js';
import { SIZE_REFUSED } from './scripts.js';

/** Where the password came from, for the message that says where to fix it. */
export type PasswordSource = 'TOKEN_STORE_PASSWORD_FILE' | 'TOKEN_STORE_URL' | undefined;

/** Socket errors that mean the store cannot be reached at all. */
const UNREACHABLE = new Set(['ECONNREFUSED', 'ECONNRESET', 'EHOSTUNREACH', 'ENETUNREACH', 'ETIMEDOUT', 'ENOTFOUND', 'EAI_AGAIN', 'EPIPE']);

/**
 * The client library's own words for a connection that is gone or never came; the reason, when
 * there is one, came before in an `error` event.
 */
export const CLOSED =
  /^(Connection is closed|Stream isn't writeable|Cluster isn't ready|None of startup nodes is available|Failed to refresh slots cache)/;

/**
 * What a Redis failure means, named for the operator: the password (error, naming the setting
 * that holds it), the user's permissions, memory, a failover, the network or TLS. `where` is the
 * store's URL without its password. The password never appears: Redis does not echo it, and any
 * text that held it would have it replaced.
 */
export function explainRedisFailure(
  err: unknown,
  where: string,
  passwordSource: PasswordSource,
  password: string | undefined,
): BackendFailure {
  const message = err instanceof Error ? err.message : String(err);
  const code = (err as { code?: unknown } | null)?.code;
  const scrub = (text: string): string => {
    const plain = redactUserinfo(text);
    return password ? plain.split(password).join('***') : plain;
  };
  const word = /^([A-Z]+)\b/.exec(message)?.[1];
  switch (word) {
    case 'WRONGPASS':
    case 'NOAUTH':
      return {
        problem: 'auth',
        connection: true,
        severe: true,
        detail:
          passwordSource === undefined
            ? `the token store at ${where} requires a password (${word}): set TOKEN_STORE_PASSWORD_FILE`
            : `the token store at ${where} refused the user and password (${word}): check the user in TOKEN_STORE_URL and ` +
              `the password in ${passwordSource}`,
      };
    case 'NOPERM':
      if (message.startsWith(SIZE_REFUSED)) {
        return {
          problem: 'noperm_sizes',
          connection: false,
          severe: true,
          detail:
            `the token store user may not run STRLEN or HSTRLEN, which measure a value before it is read (an ACL line from ` +
            `an earlier release): add them with ACL SETUSER <user> +strlen +hstrlen, as the ACL line in the documentation of ` +
            `the token store gives them (TOKEN_STORE_URL names the user)`,
        };
      }
      return {
        problem: 'noperm',
        connection: false,
        severe: true,
        detail:
          `the token store user may not do this (${scrub(message)}): give it the prefix and commands of the ACL line in the ` +
          `documentation of the token store (TOKEN_STORE_URL names the user, TOKEN_STORE_PREFIX the prefix)`,
      };
    case 'OOM':
      return {
        problem: 'oom',
        connection: false,
        severe: false,
        detail: `the token store at ${where} is out of memory (OOM): writes are refused`,
      };
    case 'READONLY':
      return {
        problem: 'readonly',
        connection: false,
        severe: false,
        detail: `the token store at ${where} is a read-only replica (READONLY), as after a failover: the next connection is made anew`,
      };
    case 'LOADING':
    case 'MASTERDOWN':
    case 'CLUSTERDOWN':
    case 'TRYAGAIN':
      return {
        problem: word.toLowerCase(),
        connection: false,
        severe: false,
        detail: `the token store at ${where} is not serving (${word})`,
      };
  }
  const revision = /^Function library \S+ is revision (\S{1,20}); this proxy calls revision (\d+)/.exec(message);
  if (revision) {
    return {
      problem: 'functions',
      connection: true,
      severe: true,
      detail:
        `the token store at ${where} holds revision ${revision[1]} of the function library TOKEN_STORE_SCRIPTS=functions calls, ` +
        `from an earlier release, and this proxy calls revision ${revision[2]}: load it again on every primary with: ` +
        `ticket-auth-proxy store-functions | redis-cli -x FUNCTION LOAD REPLACE (docs/token-store.md)`,
    };
  }
  if (/Function not found|Function library/i.test(message)) {
    return {
      problem: 'functions',
      connection: true,
      severe: true,
      detail:
        `the token store at ${where} lacks the function library TOKEN_STORE_SCRIPTS=functions calls (${scrub(message)}): load ` +
        `it on every primary with: ticket-auth-proxy store-functions | redis-cli -x FUNCTION LOAD REPLACE (docs/token-store.md)`,
    };
  }
  // The client's own timeouts: on a command (`commandTimeout`), on connecting (`connectTimeout`),
  // on reading a cluster's slots (`slotsRefreshTimeout`, which says only "timeout").
  if (message.startsWith('Command timed out') || code === 'ETIMEDOUT' || message === 'timeout') {
    return { problem: 'timeout', connection: true, severe: false, detail: `the token store at ${where} did not answer in time` };
  }
  // `where` is the URL as shown (quoted): rediss: is Redis over TLS.
  const reason = networkFailureReason(err, where.includes('rediss:'));
  if (reason.startsWith('TLS: ')) {
    return {
      problem: 'tls',
      connection: true,
      severe: true,
      detail: `the TLS connection to the token store at ${where} failed: ${reason.slice(5)}`,
    };
  }
  if (typeof code === 'string' && UNREACHABLE.has(code)) {
    return {
      problem: code,
      connection: true,
      severe: false,
      detail: `the token store at ${where} cannot be reached (${code}): check TOKEN_STORE_URL`,
    };
  }
  if (CLOSED.test(message)) {
    return {
      problem: 'closed',
      connection: true,
      severe: false,
      detail: `the connection to the token store at ${where} closed (${scrub(message)})`,
    };
  }
  return { problem: 'error', connection: false, severe: false, detail: `the token store at ${where} failed: ${scrub(message)}` };
}
