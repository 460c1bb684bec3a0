/**
 * Secrets written through every way they enter the proxy, and every output grepped for them, as a
 * property: generated secrets (unicode, quotes, colons, percent signs, YAML's and URL's special
 * characters) given as `CLIENT_SECRET`, in `CLIENT_SECRET_FILE` and in the YAML file, a caller's
 * pass-through secret, and the token store's password; an identity provider that echoes in its
 * `error_description` everything it was sent (the form, the Basic credentials), and a store that
 * echoes every command it is sent in its error. Whatever `check` and the running proxy write, at
 * any level, holds none of them, as sent or encoded.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer as createTcpServer, type Server as TcpServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { closedPort, runCli, startProxy, type ProxyHandle } from '../helpers/index.js';
import { SEED } from '../property/budget.js';

const servers: (Server | TcpServer)[] = [];
const proxies: ProxyHandle[] = [];
afterEach(async () => {
  for (const p of proxies.splice(0)) await p.stop();
  for (const s of servers.splice(0)) await new Promise((resolve) => s.close(resolve));
});

/** A token endpoint that refuses every request, quoting all it was sent in its error_description. */
async function echoingProvider(): Promise<string> {
  const server = createHttpServer((req, res) => {
    let body = '';
    req.setEncoding('utf8').on('data', (c: string) => (body += c));
    req.on('end', () => {
      res.writeHead(401, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          error: 'invalid_client',
          error_description: `you sent ${body} with ${req.headers.authorization ?? 'no authorization'}`,
        }),
      );
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as { port: number }).port}`;
}

/** A "Redis" that answers every command with an error quoting the command's arguments. */
async function echoingStore(): Promise<number> {
  const server = createTcpServer((socket) => {
    socket.on('data', (chunk) => {
      const words = chunk
        .toString('utf8')
        .split('\r\n')
        .filter((l) => l !== '' && !l.startsWith('*') && !l.startsWith('$'));
      socket.write(`-ERR unknown command, with args beginning with: ${words.join(' ')}\r\n`);
    });
    socket.on('error', () => {});
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as { port: number }).port;
}

/** A secret as an operator might have one: printable, a high-entropy core, any of the characters that need quoting somewhere. */
const secretArb = fc
  .tuple(
    fc.stringMatching(/^[A-Za-z0-9]{12}$/),
    fc.array(fc.constantFrom(...`'"\\:@/%#!$&=+?;, {}[]*|>-~\`ü€😀`.split(/(?:)/u)), { maxLength: 6 }),
    fc.nat(12),
  )
  .map(([core, extra, at]) => {
    const s = core.slice(0, at) + extra.join('') + core.slice(at);
    return s.trim() === s ? s : `x${s}x`;
  });

/** The forms a secret could be written in. */
function formsOf(secret: string, clientId: string): string[] {
  return [
    secret,
    encodeURIComponent(secret),
    new URLSearchParams({ s: secret }).toString().slice(2),
    Buffer.from(secret).toString('base64'),
    Buffer.from(`${clientId}:${secret}`).toString('base64'),
    JSON.stringify(secret).slice(1, -1),
  ];
}

function expectNone(output: string, secrets: Record<string, string>, clientId: string): void {
  for (const [what, secret] of Object.entries(secrets)) {
    for (const form of formsOf(secret, clientId)) expect(output, `${what} (${form}) in:\n${output}`).not.toContain(form);
  }
}

describe('secrets through every way in, and every output', () => {
  it('appear in nothing check or the running proxy writes, whatever the provider and the store echo', async () => {
    const provider = await echoingProvider();
    const storePort = await echoingStore();
    const dir = mkdtempSync(join(tmpdir(), 'tap-secrets-'));
    let run = 0;
    await fc.assert(
      fc.asyncProperty(secretArb, secretArb, secretArb, secretArb, async (envSecret, fileSecret, callerSecret, storePassword) => {
        run++;
        const secrets = { envSecret, fileSecret, callerSecret, storePassword };
        const base = {
          BASE_URL: provider,
          TOKEN_URL: `${provider}/token`,
          CLIENT_ID: 'app',
          ALLOW_INSECURE_HTTP: 'true',
          TOKEN_STORE_URL: `redis://user:${encodeURIComponent(storePassword)}@127.0.0.1:${storePort}`,
          TOKEN_STORE_TIMEOUT_MS: '500',
        };
        // CLIENT_SECRET, and check: its stdout and stderr.
        const checked = await runCli(['check'], { ...base, CLIENT_SECRET: envSecret }, 30_000);
        expect(checked.code).toBe(1);
        expectNone(checked.stdout + checked.stderr, secrets, 'app');

        // CLIENT_SECRET_FILE and the YAML file, and the running proxy with a caller's own secret.
        const file = join(dir, `secret-${run}`);
        writeFileSync(file, `${fileSecret}\n`);
        const yaml = join(dir, `proxy-${run}.yaml`);
        writeFileSync(yaml, `clientSecret: ${JSON.stringify(envSecret)}\ntokenParams: {}\n`);
        const fromYaml = await runCli(['check'], { ...base, CONFIG_FILE: yaml }, 30_000);
        expectNone(fromYaml.stdout + fromYaml.stderr, secrets, 'app');

        const proxy = await startProxy({ ...base, CLIENT_SECRET_FILE: file, PASSTHROUGH_BASIC: 'true', LOG_LEVEL: 'trace' });
        proxies.push(proxy);
        const res = await fetch(`${proxy.proxyUrl}/api/v1/tickets`, {
          headers: { authorization: `Basic ${Buffer.from(`caller:${callerSecret}`).toString('base64')}` },
        });
        expect(res.status).toBe(401);
        await res.arrayBuffer();
        await proxy.waitForLog((l) => l.msg === 'token endpoint rejected the client credentials' && l.credential === 'configured', 15_000);
        await proxy.stop();
        proxies.splice(proxies.indexOf(proxy), 1);
        expectNone(proxy.output(), secrets, 'app');
        expectNone(proxy.output(), { callerSecret }, 'caller');
      }),
      { seed: SEED, numRuns: 5 },
    );
  }, 180_000);

  it('a store nobody answers on names no password either', async () => {
    const password = 'pw-Zx81:/@%25?';
    const port = await closedPort();
    const checked = await runCli(
      ['check'],
      {
        BASE_URL: 'http://127.0.0.1:1',
        CLIENT_ID: 'app',
        CLIENT_SECRET: 'whatever-secret',
        ALLOW_INSECURE_HTTP: 'true',
        TOKEN_STORE_URL: `redis://user:${encodeURIComponent(password)}@127.0.0.1:${port}`,
      },
      30_000,
    );
    expectNone(checked.stdout + checked.stderr, { password }, 'app');
  }, 60_000);
});
