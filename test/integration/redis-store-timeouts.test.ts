/**
 * The store timeout against the event loop's order: a process held off the CPU past a deadline
 * (a CPU limit) runs its due timers before it reads what arrived on its sockets meanwhile. An
 * answer that came in time, a refused password among them, must win over the deadline, or a
 * wrong password reads as a store that did not answer. A store that speaks the protocol on a
 * loopback socket plays the server; the deadline is fired, as a throttled process finds it due,
 * after the server's answer reached the socket and before the proxy's side read it.
 */
import { createServer, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { Clock } from '../../src/core/clock.js';
import { systemClock } from '../../src/core/clock.js';
import { openTokenStore, type OpenedStore } from '../../src/store/open-store.js';
import { FakeLog } from '../helpers/fakes.js';
import { pollUntil } from '../helpers/index.js';
import { storeSettings, testDeriver } from '../helpers/redis-harness.js';

/** A store timeout no other timer of the store uses: the clock below holds these back. */
const TIMEOUT_MS = 45_000;
const CREDENTIAL = { description: 'client_id=app scope=tickets.read', keyMaterial: Buffer.from('client-secret') };

/** The system clock, except that timers of the store timeout wait until `fire()` (all, or the oldest `n`). */
function heldDeadlines(): Clock & { fire(n?: number): void; readonly held: number } {
  const held = new Set<{ fn: () => void }>();
  return {
    now: () => Date.now(),
    setTimeout(fn, ms) {
      if (ms !== TIMEOUT_MS) return systemClock.setTimeout(fn, ms);
      const handle = { fn };
      held.add(handle);
      return handle;
    },
    clearTimeout(handle) {
      if (!held.delete(handle as { fn: () => void })) systemClock.clearTimeout(handle);
    },
    fire(n = Infinity) {
      for (const h of [...held].slice(0, n)) {
        held.delete(h);
        h.fn();
      }
    },
    get held() {
      return held.size;
    },
  };
}

/**
 * A store that refuses every password. Having written its refusal, it sets a timer that fires the
 * held deadlines and keeps the event loop a few milliseconds: the proxy's side finds the deadline
 * due in the next turn's timers, before that turn reads the refusal from its socket.
 */
async function refusingStore(clock: { fire(): void }): Promise<{ port: number; commands: string[]; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const commands: string[] = [];
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
    socket.on('close', () => sockets.delete(socket));
    socket.on('data', (chunk: Buffer) => {
      for (const [, name] of String(chunk).matchAll(/^\*\d+\r\n\$\d+\r\n([A-Za-z]+)\r\n/gm)) {
        const command = name!.toUpperCase();
        commands.push(command);
        if (command !== 'AUTH') continue;
        socket.write('-WRONGPASS invalid username-password pair or user is disabled.\r\n');
        setTimeout(() => clock.fire(), 0);
        const until = Date.now() + 20;
        while (Date.now() < until) {
          // The process busy elsewhere: the timer just set is due by the time the loop turns.
        }
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    commands,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

const opened: OpenedStore[] = [];
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((s) => s.close()));
  await Promise.all(closers.splice(0).map((close) => close()));
});

describe('the store timeout, when the process runs its timers before its sockets', () => {
  it('reports a refused password that arrived before the deadline was read as refused, never as a timeout', async () => {
    const clock = heldDeadlines();
    const store = await refusingStore(clock);
    try {
      const log = new FakeLog();
      const target = { url: `redis://ticket-proxy@127.0.0.1:${store.port}`, mode: 'standalone' as const, password: 'not-the-password' };
      const open = openTokenStore({
        settings: storeSettings(target, 'tap-test:', TIMEOUT_MS),
        fetchTimeoutMs: 10_000,
        tls: {},
        clock,
        random: Math.random,
        log,
        derive: testDeriver,
      });
      opened.push(open);
      const slot = await open.tokens.slot(CREDENTIAL);
      const read = await slot.read();
      expect(store.commands).toContain('AUTH');
      expect(read).toMatchObject({ kind: 'unavailable', reason: 'error', detail: expect.stringContaining('WRONGPASS') });
      expect(log.at('error')).toHaveLength(1);
      expect((log.at('error')[0]!.obj as { detail: string }).detail).toContain('TOKEN_STORE_PASSWORD_FILE');
      expect(log.text()).not.toContain('not-the-password');
    } finally {
      await store.close();
    }
  });

  it("runs an operation that joined a connection made ahead of need to the operation's own deadline, not the connection's", async () => {
    // The connection is made while a key is derived (on a tenth of a core, slowly); a read joins
    // it; the connection's own deadline falls due before the store has answered AUTH.
    const clock = heldDeadlines();
    const sockets = new Set<Socket>();
    let answerAuth: () => void = () => {};
    const authSent = new Promise<void>((sent) => {
      const server = createServer((socket) => {
        sockets.add(socket);
        socket.on('error', () => undefined);
        socket.on('data', (chunk: Buffer) => {
          for (const [, name] of String(chunk).matchAll(/^\*\d+\r\n\$\d+\r\n([A-Za-z]+)\r\n/gm)) {
            if (name!.toUpperCase() !== 'AUTH') socket.write('-ERR the store answered the read\r\n');
            else {
              answerAuth = () => socket.write('+OK\r\n');
              sent();
            }
          }
        });
      });
      closers.push(
        () =>
          new Promise<void>((resolve) => {
            for (const x of sockets) x.destroy();
            server.close(() => resolve());
          }),
      );
      server.listen(0, '127.0.0.1', () => (port = (server.address() as { port: number }).port));
    });
    let port = 0;
    await pollUntil(() => port !== 0, { timeoutMs: 2_000 });
    const target = { url: `redis://ticket-proxy@127.0.0.1:${port}`, mode: 'standalone' as const, password: 'store-password' };
    const open = openTokenStore({
      settings: storeSettings(target, 'tap-test:', TIMEOUT_MS),
      fetchTimeoutMs: 10_000,
      tls: {},
      clock,
      random: Math.random,
      log: new FakeLog(),
      derive: testDeriver,
    });
    opened.push(open);
    const slot = await open.tokens.slot(CREDENTIAL);
    open.tokens.need();
    await authSent;
    const reading = slot.read();
    await pollUntil(() => clock.held === 2, { timeoutMs: 2_000 });
    // The connection's deadline (the older one) falls due; the read's has not.
    clock.fire(1);
    await new Promise((resolve) => setImmediate(resolve));
    answerAuth();
    expect(await reading).toMatchObject({
      kind: 'unavailable',
      reason: 'error',
      detail: expect.stringContaining('the store answered the read'),
    });
  });
});
