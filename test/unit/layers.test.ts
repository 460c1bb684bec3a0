import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * The layer rule of docs/development.md, "The house: rooms in layers": imports point down
 * `main / app → admin, telemetry → proxy → overload → token → store → net → config → core`, and `mock/`
 * imports nothing of the product. Type-only imports count too.
 */
const SRC = resolve(import.meta.dirname, '../../src');
const RANK: Record<string, number> = {
  core: 0,
  config: 1,
  net: 2,
  store: 3,
  token: 4,
  overload: 5,
  proxy: 6,
  telemetry: 7,
  admin: 7,
  app: 8,
  'main.ts': 9,
  'demo.ts': 9,
};

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sourceFiles(path) : path.endsWith('.ts') ? [path] : [];
  });
}

function roomOf(file: string): string {
  return relative(SRC, file).split('/')[0]!;
}

function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const specs = [...text.matchAll(/(?:from|import)\s*\(?\s*'(\.{1,2}\/[^']+)'/g)].map((m) => m[1]!);
  return specs.map((spec) => resolve(dirname(file), spec.replace(/\.js$/, '.ts')));
}

const edges = sourceFiles(SRC).flatMap((file) => importsOf(file).map((target) => ({ file, target })));

describe('the layer rule', () => {
  it('reads the imports of every source file', () => {
    expect(edges.length).toBeGreaterThan(50);
  });

  it('has every room of src/ placed in a layer', () => {
    const rooms = new Set(sourceFiles(SRC).map(roomOf));
    rooms.delete('mock');
    expect([...rooms].filter((room) => RANK[room] === undefined)).toEqual([]);
  });

  it('lets no import run up the layers or sideways between two rooms of one layer', () => {
    const upward = edges
      .filter(({ file, target }) => {
        const from = roomOf(file);
        const to = roomOf(target);
        if (from === to || from === 'mock' || to === 'mock') return false;
        return !(RANK[to]! < RANK[from]!);
      })
      .map(({ file, target }) => `${relative(SRC, file)} -> ${relative(SRC, target)}`);
    expect(upward).toEqual([]);
  });

  it('keeps the mock apart: it imports nothing of the product, and only the demo imports it', () => {
    const crossing = edges
      .filter(({ file, target }) => (roomOf(file) === 'mock') !== (roomOf(target) === 'mock'))
      .filter(({ file }) => roomOf(file) !== 'demo.ts')
      .map(({ file, target }) => `${relative(SRC, file)} -> ${relative(SRC, target)}`);
    expect(crossing).toEqual([]);
  });
});
