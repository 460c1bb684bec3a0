import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import * as core from '../../src/core/errors.js';
import * as token from '../../src/token/errors.js';

const root = join(import.meta.dirname, '..', '..');
const main = join(root, 'dist', 'main.js');

/** A Node older than 22 on this machine (Debian's, or the one CI's machine starts with), if any. */
function olderNode(): string | undefined {
  for (const candidate of ['/usr/bin/node', '/usr/local/bin/node']) {
    if (!existsSync(candidate)) continue;
    const version = spawnSync(candidate, ['-p', 'process.versions.node'], { encoding: 'utf8' }).stdout.trim();
    if (Number(version.split('.')[0]) < 22) return candidate;
  }
  return undefined;
}

describe('the built entry (docs/performance.md: one file loads leaner than two hundred modules)', () => {
  const source = readFileSync(main, 'utf8');

  it('is one module: it imports nothing of the project or of the bundled dependencies', () => {
    const statics = source.matchAll(/(?:^|;)\s*import\s*(?:[\w$*{}\s,]+from\s*)?['"]([^'"]+)['"]/gm);
    const dynamics = source.matchAll(/\bimport\(\s*['"]([^'"]+)['"]\s*\)/g);
    const specifiers = [...statics, ...dynamics].map((m) => m[1]);
    expect(specifiers).toContain('node:module');
    const outside = specifiers.filter((s) => s !== undefined && !s.startsWith('node:'));
    // yaml, jose and the Redis client stay outside on purpose: only the configurations that use them load them.
    // prom-client requires the OpenTelemetry API (below).
    expect(new Set(outside.filter((s) => s !== 'iovalkey' && !(s ?? '').startsWith('@opentelemetry/')))).toEqual(new Set(['yaml', 'jose']));
    expect(source).not.toMatch(/from\s*['"]\.\.?\//);
  });

  it('loads the Redis client only when a token store is configured: by a dynamic import alone, never bundled', () => {
    // A sentence of the library's own: its code is not in the bundle.
    expect(source).not.toContain('enableOfflineQueue options is false');
    expect(source).not.toMatch(/(?:^|;)\s*import\s*(?:[\w$*{}\s,]+from\s*)?['"]iovalkey['"]/m);
    expect(source).not.toMatch(/require\(\s*['"]iovalkey['"]\s*\)/);
  });

  it("loads no OpenTelemetry SDK: the spans and their OTLP encoding are the proxy's own (src/telemetry/tracing/)", () => {
    expect(source).not.toMatch(/(?:^|;)\s*import\s*(?:[\w$*{}\s,]+from\s*)?['"]@opentelemetry\/[^'"]+['"]/m);
    // prom-client requires the OpenTelemetry API (for exemplars) as it always did; nothing else is.
    expect(new Set([...source.matchAll(/require\(\s*['"](@opentelemetry\/[^'"]+)['"]\s*\)/g)].map((m) => m[1]))).toEqual(
      new Set(['@opentelemetry/api']),
    );
    expect([...source.matchAll(/\bimport\(\s*['"](@opentelemetry\/[^'"]+)['"]\s*\)/g)]).toEqual([]);
  });

  it('takes node:http with require(), so http.WebSocket never loads Node’s own undici', () => {
    expect(source).not.toMatch(/from\s*['"](node:)?http['"]/);
  });

  it("keeps the names of the proxy's error classes, which name every error (esbuild renames a class whose name another module uses)", () => {
    const names = [...Object.keys(core), ...Object.keys(token)].filter((name) => name.endsWith('Error'));
    expect(names.length).toBeGreaterThan(15);
    for (const name of names) {
      expect(source).toMatch(new RegExp(`\\b${name}\\b`));
      expect(source).not.toMatch(new RegExp(`\\b${name}\\d+\\b`));
    }
  });

  it.skipIf(olderNode() === undefined)('tells a user on an older Node which version it needs, before any dependency runs', () => {
    const run = spawnSync(olderNode() as string, [main, '--help'], { encoding: 'utf8' });
    expect(run.status).toBe(1);
    expect(run.stderr.trim()).toMatch(/^ticket-auth-proxy needs Node\.js 22 or later; this is Node\.js \d+\.\d+\.\d+$/);
  });
});
