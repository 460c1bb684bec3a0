import type { Clock } from '../../src/core/clock.js';
import type { Log } from '../../src/core/log.js';
import type { Credential } from '../../src/token/client-auth/index.js';
import type { FetchToken } from '../../src/token/fetch-token.js';
import type { TokenGrant } from '../../src/token/parse-response.js';

/** One call the fake token fetcher received, answered from the test. */
export interface FetchCall {
  readonly credential: Credential;
  /** Clock time at which the call was made. */
  readonly at: number;
  succeed(accessToken: string, lifetimeMs: number): void;
  fail(err: unknown): void;
}

/** What `answer` returns for a call: a grant, or an error to reject with. */
export type Answer = TokenGrant | Error;

/**
 * A token fetcher whose promises the test settles. Each call is recorded with the credential it
 * was given; `answer`, when set, settles every new call at once.
 */
export class FakeFetcher {
  readonly calls: FetchCall[] = [];
  answer: ((call: FetchCall) => Answer) | undefined;

  constructor(private readonly clock: Clock) {}

  readonly fetchToken: FetchToken = (credential) =>
    new Promise<TokenGrant>((resolve, reject) => {
      const call: FetchCall = {
        credential: { ...credential },
        at: this.clock.now(),
        succeed: (accessToken, lifetimeMs) => resolve({ accessToken, lifetimeMs }),
        fail: reject,
      };
      this.calls.push(call);
      if (this.answer !== undefined) {
        const a = this.answer(call);
        if (a instanceof Error) reject(a);
        else resolve(a);
      }
    });

  get last(): FetchCall {
    const c = this.calls.at(-1);
    if (c === undefined) throw new Error('FakeFetcher: no call yet');
    return c;
  }
}

export interface LogLine {
  level: 'error' | 'warn' | 'info' | 'debug';
  obj: object;
  msg: string;
}

/** A log that keeps its lines. */
export class FakeLog implements Log {
  readonly lines: LogLine[] = [];
  error(obj: object, msg: string): void {
    this.lines.push({ level: 'error', obj, msg });
  }
  warn(obj: object, msg: string): void {
    this.lines.push({ level: 'warn', obj, msg });
  }
  info(obj: object, msg: string): void {
    this.lines.push({ level: 'info', obj, msg });
  }
  debug(obj: object, msg: string): void {
    this.lines.push({ level: 'debug', obj, msg });
  }
  at(level: LogLine['level']): LogLine[] {
    return this.lines.filter((l) => l.level === level);
  }
  /** Everything logged, as one string to search for things that must never appear. */
  text(): string {
    return JSON.stringify(this.lines, (_k, v: unknown) => (v instanceof Error ? { message: v.message, cause: v.cause } : v));
  }
}

/** Tracks a promise's outcome without awaiting it. */
export function track<T>(p: Promise<T>): { state: 'pending' | 'resolved' | 'rejected'; value?: T; error?: unknown } {
  const t: { state: 'pending' | 'resolved' | 'rejected'; value?: T; error?: unknown } = { state: 'pending' };
  p.then(
    (value) => {
      t.state = 'resolved';
      t.value = value;
    },
    (error: unknown) => {
      t.state = 'rejected';
      t.error = error;
    },
  );
  return t;
}
