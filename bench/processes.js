/** What the benchmarks share: where the project is, the image's NODE_OPTIONS, free loopback ports. */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/** The NODE_OPTIONS the Dockerfile ships, so the product is measured as the image runs it. */
export function imageNodeOptions() {
  let dockerfile;
  try {
    dockerfile = readFileSync(join(root, 'Dockerfile'), 'utf8');
  } catch {
    return '';
  }
  // In an ENV instruction, on its own or among others continued over several lines.
  const match = /^\s*(?:ENV\s+)?NODE_OPTIONS=(?:"([^"]*)"|(\S*))/m.exec(dockerfile);
  return match ? (match[1] ?? match[2] ?? '') : '';
}

/** A loopback port free at the time of asking. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}
