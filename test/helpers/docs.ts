/**
 * The documentation as the tests read it: the README and the pages of `docs/`, their headings
 * and sections, tables, links and marked examples (docs/development.md, "The documentation and
 * its tests"). Headings, tables and links are read outside fenced code blocks only.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export const ROOT = join(import.meta.dirname, '..', '..');

/** The README and every page of `docs/`, as paths from the repository root. */
export function docPages(): string[] {
  const pages = readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => `docs/${f}`);
  return ['README.md', ...pages];
}

/** A page's text, by its path from the repository root. */
export function readDoc(path: string): string {
  return readFileSync(join(ROOT, path), 'utf8');
}

/** `text` without its fenced code blocks (fences and the code in them become empty lines). */
export function prose(text: string): string {
  return proseLines(text).join('\n');
}

/** The lines of `text` outside fenced code blocks (fences and the code in them become empty lines). */
function proseLines(text: string): string[] {
  let fenced = false;
  return text.split('\n').map((line) => {
    if (line.startsWith('```')) {
      fenced = !fenced;
      return '';
    }
    return fenced ? '' : line;
  });
}

export interface Heading {
  level: number;
  text: string;
  /** The fragment GitHub gives it, without `#`. */
  anchor: string;
  /** Its line, counted from 0. */
  line: number;
}

/** The anchor GitHub gives a heading: lower case, code marks and punctuation dropped, each space a hyphen. */
export function slug(text: string): string {
  return text
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/ /g, '-');
}

/** The headings of a page, with their anchors (a repeated one numbered `-1`, `-2`, as GitHub does). */
export function headings(text: string): Heading[] {
  const seen = new Map<string, number>();
  const out: Heading[] = [];
  proseLines(text).forEach((line, i) => {
    const m = /^(#{1,6}) (.+?)\s*$/.exec(line);
    if (!m) return;
    const base = slug(m[2]!);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.push({ level: m[1]!.length, text: m[2]!, anchor: n === 0 ? base : `${base}-${n}`, line: i });
  });
  return out;
}

/**
 * The text under the heading whose text is `title` (at any level), up to the next heading of the
 * same or a higher level. Throws when the page has no such heading, so a renamed section fails
 * the test that reads it.
 */
export function section(text: string, title: string): string {
  const all = headings(text);
  const at = all.findIndex((h) => h.text === title);
  if (at === -1) throw new Error(`no heading "${title}"`);
  const end = all.slice(at + 1).find((h) => h.level <= all[at]!.level);
  return text
    .split('\n')
    .slice(all[at]!.line + 1, end?.line)
    .join('\n');
}

export interface Table {
  header: string[];
  rows: string[][];
}

function cells(line: string): string[] {
  return line
    .trim()
    .replace(/^\||\|$/g, '')
    .split('|')
    .map((c) => c.trim());
}

/** Every table in `text`: its header cells and its rows' cells. */
export function tables(text: string): Table[] {
  const out: Table[] = [];
  let current: Table | undefined;
  const lines = proseLines(text);
  lines.forEach((line, i) => {
    if (!line.startsWith('|')) {
      current = undefined;
      return;
    }
    if (current === undefined) {
      if (!/^\|[\s:|-]+\|?$/.test(lines[i + 1] ?? '')) return;
      current = { header: cells(line), rows: [] };
      out.push(current);
    } else if (!/^\|[\s:|-]+\|?$/.test(line)) {
      current.rows.push(cells(line));
    }
  });
  return out;
}

/** The rows of every table in `text` whose first header cell is `first`. */
export function rowsOf(text: string, first: string): string[][] {
  return tables(text)
    .filter((t) => t.header[0] === first)
    .flatMap((t) => t.rows);
}

/** The `code` spans of a piece of Markdown, in order. */
export function codeSpans(markdown: string): string[] {
  return [...markdown.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
}

/** The targets of the inline links of a page (`[text](target)`), outside code. */
export function links(text: string): string[] {
  return proseLines(text)
    .map((line) => line.replace(/`[^`]*`/g, ''))
    .flatMap((line) => [...line.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!));
}

export interface Example {
  /** The page it is in. */
  page: string;
  body: string;
}

/** The code blocks marked `<!-- example: NAME -->` in the README and the pages of `docs/`, by name. */
export function examples(): Map<string, Example> {
  const out = new Map<string, Example>();
  for (const page of docPages()) {
    for (const m of readDoc(page).matchAll(/<!-- example: (\S+) -->\n```[a-z]*\n([\s\S]*?)```\n/g)) {
      if (out.has(m[1]!)) throw new Error(`example ${m[1]} is in ${out.get(m[1]!)!.page} and in ${page}`);
      out.set(m[1]!, { page, body: m[2]! });
    }
  }
  return out;
}
