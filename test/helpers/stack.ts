/**
 * The integration-test stack: the mock Ticket Service and the real proxy process
 * (`node dist/main.js`, through {@link startProxy}), started together, waited on until ready,
 * and stopped with a leak check: neither the client secret, its base64 form, the Basic value of
 * the configured credential, nor any token the mock issued appears in anything the proxy wrote
 * (stdout and stderr).
 *
 * Two fixtures, both tearing down where they create:
 * - `test` (from this module) gives each test `stack(options)`: start as many stacks as the test
 *   needs; all stop, and are checked, when the test ends.
 * - `sharedStack(options)` gives a file one stack (`shared`), started by the first test that
 *   uses it and stopped, and checked, when the file ends.
 */
import { randomBytes } from 'node:crypto';
import { expect, test as base } from 'vitest';
import {
  createMockTicketService,
  type MockTicketService,
  type MockTicketServiceOptions,
  type TokenFault,
} from '../../src/mock/ticket-service.js';
import { pollUntil, startProxy, type ProxyHandle } from './index.js';

export interface StackOptions {
  /** Proxy settings, added to (and overriding) BASE_URL, CLIENT_ID and CLIENT_SECRET; a function is given the mock. */
  env?: Record<string, string> | ((gateway: MockTicketService) => Record<string, string>);
  /** Options of the mock this stack starts (its clients default to `{ [clientId]: secret }`). */
  mock?: MockTicketServiceOptions;
  /** Use this running mock instead of starting one; the stack does not close it. */
  gateway?: MockTicketService;
  /** The configured client id; default `client`. */
  clientId?: string;
  /** The configured client secret; default a fresh random one. */
  secret?: string;
  /** `false`: configure no CLIENT_ID/CLIENT_SECRET (pass-through only, other methods). */
  credentials?: boolean;
  /** A fault queued on the mock's token endpoint before the proxy starts. */
  tokenFault?: TokenFault;
  /** Wait until /readyz answers 200 (default); `false` returns once the listeners are up. */
  ready?: boolean;
  /** How long the proxy may take to be ready (its listeners up, then /readyz 200), each; 15 s and 10 s by default. */
  readyTimeoutMs?: number;
  /** Command-line arguments for the proxy. */
  args?: string[];
  /** A command prefix the proxy is started through (test/helpers/ipv6.ts `WITHOUT_IPV6`). */
  wrap?: string[];
  /** More values (or patterns) that must not appear in the proxy's output; read at teardown, so values pushed later count. */
  mustNotLeak?: (string | RegExp)[];
}

export interface Stack {
  gateway: MockTicketService;
  proxy: ProxyHandle;
  clientId: string;
  secret: string;
  /** Polls /readyz until it answers 200. */
  untilReady(timeoutMs?: number): Promise<void>;
  /** The first capture group of `pattern` at the start of a line of /metrics, as a number (NaN when absent). */
  metric(pattern: RegExp): Promise<number>;
  /** Adds values (or patterns) that must not appear in the proxy's output. */
  mustNotLeak(...values: (string | RegExp)[]): void;
  /** Stops the proxy (and the mock it started), then runs the leak check. Idempotent. */
  stop(): Promise<void>;
}

/** The text of the proxy's /metrics. */
export async function metricsText(proxy: Pick<ProxyHandle, 'adminUrl'>): Promise<string> {
  return (await fetch(`${proxy.adminUrl}/metrics`)).text();
}

/** The first capture group of `pattern` at the start of a line of /metrics, as a number (NaN when absent). */
export async function metric(proxy: Pick<ProxyHandle, 'adminUrl'>, pattern: RegExp): Promise<number> {
  const m = new RegExp(`^${pattern.source}`, 'm').exec(await metricsText(proxy));
  return m ? Number(m[1]) : NaN;
}

/** Polls the proxy's /readyz until it answers 200. */
export function untilReady(proxy: Pick<ProxyHandle, 'adminUrl'>, timeoutMs = 10_000): Promise<void> {
  return pollUntil(async () => (await fetch(`${proxy.adminUrl}/readyz`)).status === 200, { timeoutMs });
}

/** A value that must not appear in the proxy's output, and what it is (the failure names that, never the value). */
export type Leak = [what: string, value: string | RegExp];

/** Asserts that nothing in `output` matches any of `leaks`, without printing either. */
export function expectNoLeak(output: string, leaks: Iterable<Leak>): void {
  for (const [what, value] of leaks) {
    const found = typeof value === 'string' ? value !== '' && output.includes(value) : value.test(output);
    expect(found, `the proxy output contains ${what}`).toBe(false);
  }
}

const b64 = (text: string): string => Buffer.from(text).toString('base64');

/**
 * Starts a stack. Prefer the fixtures, which stop it; a caller of this function stops it itself
 * with `stack.stop()`.
 */
export async function startStack(options: StackOptions = {}): Promise<Stack> {
  const clientId = options.clientId ?? 'client';
  const secret = options.secret ?? `s-${randomBytes(8).toString('hex')}`;
  const owned = options.gateway === undefined;
  const gateway = options.gateway ?? (await createMockTicketService({ clients: { [clientId]: secret }, tokenTtlS: 600, ...options.mock }));
  const named = (value: string | RegExp): Leak => ['a value the test named secret', value];
  const leaks: Leak[] = [];
  if (options.credentials !== false) {
    leaks.push(
      ['the client secret', secret],
      ['the client secret in base64', b64(secret)],
      ['the Basic credentials', b64(`${clientId}:${secret}`)],
    );
  }
  let proxy: ProxyHandle | undefined;
  let stopped = false;
  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    try {
      await proxy?.stop();
    } finally {
      if (owned) await gateway.close();
    }
    if (proxy) {
      const tokens = gateway.issuedTokens().map((t): Leak => ['a token the mock issued', t]);
      expectNoLeak(proxy.output(), [...leaks, ...(options.mustNotLeak ?? []).map(named), ...tokens]);
    }
  };
  try {
    if (options.tokenFault) gateway.setTokenFault(options.tokenFault);
    const credentials: Record<string, string> = options.credentials === false ? {} : { CLIENT_ID: clientId, CLIENT_SECRET: secret };
    proxy = await startProxy(
      { BASE_URL: gateway.url, ...credentials, ...(typeof options.env === 'function' ? options.env(gateway) : options.env) },
      { args: options.args, wrap: options.wrap, upTimeoutMs: options.readyTimeoutMs },
    );
    if (options.ready !== false) await untilReady(proxy, options.readyTimeoutMs);
  } catch (err) {
    await stop().catch(() => {});
    throw err;
  }
  const handle = proxy;
  return {
    gateway,
    proxy: handle,
    clientId,
    secret,
    untilReady: (timeoutMs) => untilReady(handle, timeoutMs),
    metric: (pattern) => metric(handle, pattern),
    mustNotLeak: (...values) => void leaks.push(...values.map(named)),
    stop,
  };
}

/** Starts stacks for one test; every one is stopped and leak-checked when the test ends. */
export type StartStack = (options?: StackOptions) => Promise<Stack>;
/** Starts a lone mock for one test (a second gateway, a token endpoint apart); closed when the test ends. */
export type StartMock = (options?: MockTicketServiceOptions) => Promise<MockTicketService>;

/**
 * vitest's `test` with two fixtures: `stack` (`const { proxy } = await stack({ env })`) and
 * `mock`, for a mock without a proxy of its own (give it to a stack with `gateway`).
 */
// vitest reads a fixture's dependencies from its first parameter's destructuring: none here.
export const test = base
  // eslint-disable-next-line no-empty-pattern
  .extend('mock', async ({}, { onCleanup }): Promise<StartMock> => {
    const started: MockTicketService[] = [];
    onCleanup(async () => {
      for (const m of started.splice(0)) await m.close();
    });
    return async (options) => {
      const m = await createMockTicketService({ tokenTtlS: 600, ...options });
      started.push(m);
      return m;
    };
  })
  // eslint-disable-next-line no-empty-pattern
  .extend('stack', async ({}, { onCleanup }): Promise<StartStack> => {
    const started: Stack[] = [];
    onCleanup(async () => {
      const errors: unknown[] = [];
      for (const s of started.splice(0)) await s.stop().catch((err: unknown) => errors.push(err));
      if (errors.length > 0) throw errors[0];
    });
    return async (options) => {
      const s = await startStack(options);
      started.push(s);
      return s;
    };
  });
export const it = test;

/** A `test` whose `shared` fixture is one stack for the whole file, stopped and leak-checked when the file ends. */
export function sharedStack(options: StackOptions = {}) {
  // eslint-disable-next-line no-empty-pattern
  return test.extend('shared', { scope: 'file' }, async ({}, { onCleanup }): Promise<Stack> => {
    const s = await startStack(options);
    onCleanup(() => s.stop());
    return s;
  });
}
