/**
 * The house map of docs/development.md ("Three walks through the code") holds to the code: every
 * row of a walk names a file of `src/` that exists and defines what the row says runs there, and
 * the counts under each walk are the table's own. A file moved, renamed or emptied of the function
 * a walk passes through fails here, and the map is drawn again.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readDoc, ROOT } from '../helpers/docs.js';

const DOC = readDoc('docs/development.md');

interface Row {
  readonly n: number;
  readonly file: string;
  /** The first name in backticks of "What runs there": a function, method or property defined in the file. */
  readonly runs: string;
}

/** The rows of the walk marked `<!-- walk: NAME -->`, and the line of counts under its table. */
function walk(name: string): { rows: Row[]; counts: string } {
  const start = DOC.indexOf(`<!-- walk: ${name} -->`);
  expect(start, `docs/development.md has the walk "${name}"`).toBeGreaterThan(-1);
  const lines = DOC.slice(start).split('\n').slice(1);
  const table = lines.slice(
    0,
    lines.findIndex((l, i) => i > 0 && !l.startsWith('|')),
  );
  const rows = table
    .filter((l) => /^\| \d+ \|/.test(l))
    .map((l) => {
      const [n, file, runs] = l
        .split('|')
        .slice(1, 4)
        .map((c) => c.trim());
      return { n: Number(n), file: /`([^`]+)`/.exec(file!)![1]!, runs: /`([^`]+)`/.exec(runs!)![1]! };
    });
  const counts = lines.slice(table.length).find((l) => l.trim() !== '')!;
  return { rows, counts };
}

/** Whether `source` defines `name`: a function, a method, an object's property, or a const. */
function defines(source: string, name: string): boolean {
  const n = name.replace(/[$]/g, '\\$&');
  const patterns = [
    new RegExp(`\\bfunction\\s+${n}\\s*[(<]`),
    new RegExp(`^\\s*(?:async\\s+)?(?:(?:private|public|protected|override|static|readonly|get)\\s+)*${n}\\s*(?:<[^>]*>)?\\(`, 'm'),
    new RegExp(`^\\s*${n}\\s*:`, 'm'),
    new RegExp(`\\b(?:const|let)\\s+${n}\\s*=`),
  ];
  return patterns.some((p) => p.test(source));
}

describe.each(['request', 'store', 'unauthorized'])('the walk "%s" of docs/development.md', (name) => {
  const { rows, counts } = walk(name);

  it('is numbered from 1, row after row', () => {
    expect(rows.length).toBeGreaterThan(1);
    expect(rows.map((r) => r.n)).toEqual(rows.map((_, i) => i + 1));
  });

  it('names files of src/ that exist, each defining what its row says runs there', () => {
    for (const { n, file, runs } of rows) {
      expect(file, `row ${n}`).toMatch(/^src\//);
      const path = join(ROOT, file);
      expect(existsSync(path), `row ${n}: ${file} exists`).toBe(true);
      expect(defines(readFileSync(path, 'utf8'), runs), `row ${n}: ${file} defines ${runs}`).toBe(true);
    }
  });

  it('says under its table the files, rooms, jumps and returns the table holds', () => {
    const files = rows.map((r) => r.file);
    const rooms = new Set(files.map((f) => f.split('/')[1]));
    const returns = files.filter((f, i) => files.indexOf(f) < i).length;
    expect(counts).toContain(`${new Set(files).size} files in ${rooms.size} rooms, ${rows.length - 1} jumps (${returns} returns).`);
  });
});

describe('the walk check itself', () => {
  it('finds a definition and refuses a call or a mention', () => {
    expect(defines('export function forward(req) {}', 'forward')).toBe(true);
    expect(defines('  private sendAgain(auth: Authorization): void {', 'sendAgain')).toBe(true);
    expect(defines('  read: (keys) =>', 'read')).toBe(true);
    expect(defines('  const countFetch = (outcome) => {', 'countFetch')).toBe(true);
    expect(defines('  this.forward(req);\n  x = forwarded;', 'forward')).toBe(false);
  });
});
