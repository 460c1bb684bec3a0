/**
 * Small tools for the tests that compare what real clients see through the proxy with what they
 * see from the gateway directly: run a client program, read a raw exchange to its end, and
 * fetch a token of the mock's own for the direct call.
 */
import { execFile } from 'node:child_process';
import type { MockTicketService } from '../../src/mock/ticket-service.js';
import { connectTo } from './index.js';

/** Runs a client program to completion and resolves with its stdout (rejects with its stderr). */
export function run(cmd: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(cmd, args, { timeout: 20_000 }, (err, stdout, stderr) =>
      err ? reject(new Error(`${cmd}: ${err.message} ${stderr}`)) : resolve(stdout),
    );
  });
}

/** Writes raw bytes (to a loopback port or a Unix socket's path) and reads everything until the server closes the connection. */
export function rawUntilClose(target: number | string, raw: string, timeoutMs = 5000): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connectTo(target);
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`connection still open after ${timeoutMs} ms; read: ${Buffer.concat(chunks).toString('latin1')}`));
    }, timeoutMs);
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', () => {});
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(Buffer.concat(chunks).toString('latin1'));
    });
    socket.write(raw);
  });
}

/** The status codes of every response in a raw exchange, in order. */
export function statuses(response: string): number[] {
  return [...response.matchAll(/(?:^|\r\n|\})HTTP\/1\.1 (\d{3}) /g)].map((m) => Number(m[1]));
}

/** The header names of a raw response head, less those each hop sets for itself. */
export function headerNames(head: string): string[] {
  return head
    .split('\r\n')
    .slice(1)
    .filter((l) => l.includes(':'))
    .map((l) => l.slice(0, l.indexOf(':')))
    .filter((n) => !/^(date|connection|keep-alive)$/i.test(n));
}

/** A token of the mock's own, for the same call made straight to the gateway. */
export async function directToken(gateway: MockTicketService, clientId: string, secret: string): Promise<string> {
  const res = await fetch(`${gateway.url}/api/v1/oauth2/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'client_credentials', client_id: clientId, client_secret: secret }),
  });
  return ((await res.json()) as { access_token: string }).access_token;
}
