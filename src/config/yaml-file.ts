import type { Document, Node, YAMLError, YAMLMap } from 'yaml';
import { ConfigError } from '../core/errors.js';
import { SETTINGS } from './config.js';
import { FILE_KEY_GROUPS } from './tracing.js';

/**
 * The configuration file as read: its values, and what YAML itself found in it, said in the
 * proxy's words. The `yaml` library prints nothing of its own: its warnings quote the line they
 * warn about, and a file's lines hold secrets.
 */
export interface SettingsFile {
  readonly path: string;
  readonly values: unknown;
  /** Keys whose value is refused as written (an unresolved tag or alias): each with its line and why, never the value. */
  readonly refused: readonly RefusedKey[];
  /** Problems of the file that belong to no setting it names, each with its line. */
  readonly problems: readonly string[];
  /** What YAML notes that changes no value (a directive it does not know), each with its line. */
  readonly warnings: readonly string[];
}

/** A key of the file whose value is refused as written. */
export interface RefusedKey {
  /** As the file writes it: `clientSecret`, or `tracing.endpoint` inside a group. */
  readonly key: string;
  readonly line: number;
  /** Why, in words that never quote the value: the value may be a secret. */
  readonly reason: string;
}

/**
 * The names a message may show for where a problem sits: the settings' file keys and the groups.
 * Any other key is the file's own text, which may be anything (a secret pasted one line too high).
 */
const KNOWN_KEYS = new Set<string>([...SETTINGS.filter((s) => !s.envOnly).map((s) => s.key as string), ...FILE_KEY_GROUPS]);

/**
 * What the library would print when given these variables: every token of the file (its lines,
 * secrets and all) on stdout, as the YAML parser's own debugging aid.
 */
const LIBRARY_DEBUG_VARIABLES = ['LOG_TOKENS', 'LOG_STREAM'] as const;

/** Why a tagged value is refused. */
const TAG = [
  'a YAML tag (a name after "!") that the proxy does not resolve: the file holds plain values;',
  'write the value itself, in quotes if it begins with "!"',
].join(' ');
/** Why an alias to no anchor is refused. */
const ALIAS = 'an alias (a name after "*") with no anchor before it: write the value itself, in quotes if it begins with "*"';

/**
 * What a YAML error code means, in words that quote nothing of the file: the library's own
 * messages may (an escape sequence, a tag's name, a directive's text).
 */
const MEANINGS: Partial<Record<YAMLError['code'], string>> = {
  ALIAS_PROPS: 'an alias cannot carry a tag or an anchor',
  BAD_ALIAS: 'an anchor or alias name that is empty or ends in ":"',
  BAD_DIRECTIVE: 'a directive (a line beginning with "%") that YAML does not know or cannot read',
  BAD_DQ_ESCAPE: 'an escape sequence double quotes do not allow: use single quotes, or write a backslash as \\\\',
  BAD_INDENT: 'indentation that does not line up with the lines around it',
  BAD_PROP_ORDER: 'a tag or anchor where none may stand',
  BAD_SCALAR_START: 'a value that begins with a character YAML reserves: put it in quotes',
  BLOCK_AS_IMPLICIT_KEY: 'a key that spans several lines',
  BLOCK_IN_FLOW: 'an indented block inside [ ] or { }',
  DUPLICATE_KEY: 'a key given twice',
  KEY_OVER_1024_CHARS: 'a key longer than 1024 characters',
  MISSING_CHAR: 'a closing quote or bracket, a comma or a colon missing',
  MULTILINE_IMPLICIT_KEY: 'a key that spans several lines',
  MULTIPLE_ANCHORS: 'two anchors on one value',
  MULTIPLE_DOCS: 'a second YAML document (after "---"): the file holds one mapping of settings',
  MULTIPLE_TAGS: 'two tags on one value',
  NON_STRING_KEY: 'a key that is a mapping or a list: keys are plain names',
  RESOURCE_EXHAUSTION: 'nesting too deep to read',
  TAB_AS_INDENT: 'a tab used to indent: YAML indents with spaces',
  UNEXPECTED_TOKEN: 'text YAML does not expect here (a value that needs quotes, or a stray character)',
};

/**
 * Reads the configuration file's text as YAML without the library printing anything: no warning
 * through `process.emitWarning`, no code frame, no debug output. Syntax errors throw a
 * {@link ConfigError} listing each with its line and column (and the setting it sits in, when it
 * is one); an unresolved tag or alias refuses the key it sits in, naming the key, never the value;
 * a YAML 1.1 type (`!!binary`, `!!timestamp`, ...) is a tag this reading does not resolve.
 * `libraryEnv` is the environment the library itself reads, the process's own: its debugging
 * variables are unset while it parses.
 */
export async function readYamlFile(path: string, text: string, libraryEnv: NodeJS.ProcessEnv): Promise<SettingsFile> {
  const yaml = await import('yaml');
  const lineCounter = new yaml.LineCounter();
  const doc = withoutLibraryDebug(libraryEnv, () =>
    yaml.parseDocument(text, {
      lineCounter,
      // No code frame: the library appends the line it complains about to its message.
      prettyErrors: false,
      // 'warn' (the default) hands every warning to process.emitWarning, which prints it.
      logLevel: 'error',
      resolveKnownTags: false,
      stringKeys: true,
      uniqueKeys: true,
    }),
  );
  const at = (offset: number): { line: number; col: number } => lineCounter.linePos(offset);
  const refused: RefusedKey[] = [];
  const problems: string[] = [];
  const warnings: string[] = [];
  const refuse = (offset: number, reason: string): void => {
    const { line } = at(offset);
    const key = keyAt(doc, offset, yaml.isMap);
    if (key !== undefined) refused.push({ key, line, reason });
    else problems.push(`${path}, line ${line}: ${reason}`);
  };

  const syntax: string[] = [];
  for (const found of [...doc.errors, ...doc.warnings]) {
    const offset = found.pos[0];
    if (found.code === 'TAG_RESOLVE_FAILED' || found.code === 'BAD_COLLECTION_TYPE') {
      refuse(offset, TAG);
      continue;
    }
    const { line, col } = at(offset);
    const key = keyAt(doc, offset, yaml.isMap);
    const where = `line ${line}, column ${col}${key === undefined ? '' : ` (in ${key})`}`;
    const meaning = MEANINGS[found.code] ?? `text YAML cannot read (${found.code})`;
    if (found.name === 'YAMLParseError') syntax.push(`${path} is not valid YAML at ${where}: ${meaning}`);
    else warnings.push(`${path}, ${where}: ${meaning}; taken as if it were not there`);
  }
  if (syntax.length > 0) throw new ConfigError(syntax);

  // An alias to no anchor is an error only when the value is built: found here, and replaced by
  // nothing, so that the rest of the file is read and every problem reported together.
  yaml.visit(doc, {
    Alias(_key, alias) {
      if (alias.resolve(doc) !== undefined) return undefined;
      refuse(alias.range?.[0] ?? 0, ALIAS);
      return new yaml.Scalar(null);
    },
  });
  let values: unknown;
  try {
    values = doc.toJS({ maxAliasCount: 100 });
  } catch (err) {
    // Aliases that expand past 100 nodes ("billion laughs"), or another refusal of the library's.
    const why = /alias count/i.test((err as Error).message) ? 'its aliases expand past 100 values' : (err as Error).name;
    throw new ConfigError([`${path} cannot be read as settings (${why})`]);
  }
  return { path, values, refused, problems, warnings };
}

/**
 * The key of the file's mapping whose entry holds `offset` (inside a group, `group.leaf`), when
 * it is a name a message may show ({@link KNOWN_KEYS}); undefined otherwise.
 */
function keyAt(doc: Document, offset: number, isMap: (node: unknown) => node is YAMLMap): string | undefined {
  const path: string[] = [];
  let node: unknown = doc.contents;
  while (path.length < 2 && isMap(node)) {
    const pair = node.items.findLast((p) => ((p.key as Node | null)?.range?.[0] ?? Infinity) <= offset);
    const key = (pair?.key as { value?: unknown } | null | undefined)?.value;
    if (pair === undefined || typeof key !== 'string') break;
    const end = (pair.value as Node | null)?.range?.[2] ?? (pair.key as Node).range?.[2] ?? -1;
    if (offset >= end) break;
    // Inside a group, a leaf that is a setting's (`tracing.endpoint` is `tracingEndpoint`), or the group alone.
    if (path.length === 1 && !KNOWN_KEYS.has(`${path[0]!}${key.charAt(0).toUpperCase()}${key.slice(1)}`)) break;
    path.push(key);
    if (!FILE_KEY_GROUPS.includes(key)) break;
    node = pair.value;
  }
  if (path.length === 0 || !KNOWN_KEYS.has(path[0]!)) return undefined;
  return path.join('.');
}

/**
 * Runs `parse` with the library's debugging variables unset: set, they make it print every token
 * of the file. The parse is synchronous, so nothing else runs while they are away.
 */
function withoutLibraryDebug<T>(env: NodeJS.ProcessEnv, parse: () => T): T {
  const saved = LIBRARY_DEBUG_VARIABLES.map((name) => [name, env[name]] as const);
  for (const [name] of saved) delete env[name];
  try {
    return parse();
  } finally {
    for (const [name, value] of saved) if (value !== undefined) env[name] = value;
  }
}
