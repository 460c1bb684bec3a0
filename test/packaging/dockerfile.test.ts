import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Arg, Cmd, Copy, DockerfileParser, Entrypoint, Env, From, type Instruction } from 'dockerfile-ast';
import { validate } from 'dockerfile-utils';
import { describe, expect, it } from 'vitest';
import { lacks, skipNote } from '../helpers/tools.js';

const root = join(import.meta.dirname, '..', '..');
const dockerfile = readFileSync(join(root, 'Dockerfile'), 'utf8');
const dockerignore = readFileSync(join(root, '.dockerignore'), 'utf8');

const SECRET_NAME = /SECRET|TOKEN|PASSWORD|PASSWD|API_?KEY|PRIVATE_KEY|CREDENTIAL/i;

/** The instructions of each stage, in order (the lines before the first FROM are left out). */
function stages(instructions: Instruction[]): Instruction[][] {
  const out: Instruction[][] = [];
  for (const instruction of instructions) {
    if (instruction.getKeyword() === 'FROM') out.push([instruction]);
    else out.at(-1)?.push(instruction);
  }
  return out;
}

/** The ENV of a stage, name to value. */
const envOf = (stage: Instruction[]): Map<string, string | null> =>
  new Map(
    stage.filter((i): i is Env => i instanceof Env).flatMap((e) => e.getProperties().map((p) => [p.getName(), p.getValue()] as const)),
  );

const runs = (stage: Instruction[]): string[] => stage.filter((i) => i.getKeyword() === 'RUN').map((i) => i.getArgumentsContent() ?? '');

/** The default value of each ARG declared before the first FROM. */
function globalArgs(instructions: Instruction[]): Map<string, string> {
  const first = instructions.findIndex((i) => i.getKeyword() === 'FROM');
  return new Map(
    instructions
      .slice(0, first === -1 ? instructions.length : first)
      .filter((i): i is Arg => i instanceof Arg)
      .map((a) => [a.getProperty()?.getName() ?? '', a.getProperty()?.getValue() ?? ''] as const),
  );
}

/** The image a FROM names (its last word but `AS name`), with ${ARG}s of the global defaults. */
function baseOf(from: Instruction, args: Map<string, string>): string {
  const words = (from.getArgumentsContent() ?? '').split(/\s+/).filter((w) => !w.startsWith('--'));
  return (words[0] ?? '').replace(/\$\{?(\w+)\}?/g, (_m, name: string) => args.get(name) ?? '');
}

/** A distroless Node base: node is its entrypoint, it has no shell, no npm, no package manager. */
const DISTROLESS_NODE = /^gcr\.io\/distroless\/nodejs\d+-debian\d+(:[\w.-]+)?(@sha256:[0-9a-f]{64})?$/;

/**
 * What the image must be: multi-stage, a lockfile install, production dependencies only at run
 * time, on a runtime base with no shell, npm or package manager (a distroless Node base) that the
 * final stage runs nothing in, the build stages on the build platform, each base named once by an
 * ARG, a numeric non-root user, node as PID 1 in exec form, no HEALTHCHECK, no secret in ENV or
 * ARG. Returns one line per broken rule.
 */
export function policyViolations(content: string): string[] {
  const violations: string[] = [];
  const parsed = DockerfileParser.parse(content);
  const instructions = parsed.getInstructions();
  const all = stages(instructions);
  const final = all.at(-1) ?? [];
  const args = globalArgs(instructions);
  if (all.length < 2) violations.push('not multi-stage: the build must not ship its dev dependencies');

  const stageNames = new Set(all.map((s) => /\sAS\s+(\S+)$/i.exec(s[0]?.getArgumentsContent() ?? '')?.[1]).filter((n) => n !== undefined));
  for (const stage of all) {
    const from = stage[0];
    if (from === undefined) continue;
    const named = (from.getArgumentsContent() ?? '').split(/\s+/).find((w) => !w.startsWith('--')) ?? '';
    if (stageNames.has(named)) continue;
    if (!/^\$\{?(NODE_IMAGE|RUNTIME_IMAGE)\}?$/.test(named))
      violations.push(`FROM ${named} names a base directly (each base is named once, by ARG NODE_IMAGE or ARG RUNTIME_IMAGE)`);
    const runsHere = runs(stage).length > 0;
    const platform = from instanceof From ? (from.getPlatformFlag()?.getValue() ?? '') : '';
    if (stage !== final && runsHere && !/^\$\{?BUILDPLATFORM\}?$/.test(platform))
      violations.push(`the stage FROM ${named} runs commands on the target platform (an arm64 build would emulate them)`);
  }
  const runtimeBase = final[0] === undefined ? '' : baseOf(final[0], args);
  const distroless = DISTROLESS_NODE.test(runtimeBase);
  if (!distroless) violations.push(`the runtime base ${runtimeBase} is not a distroless Node base (it would ship a shell, npm and apt)`);
  if (runs(final).length > 0) violations.push('the final stage runs commands (its base has no shell)');

  const users = final.filter((i) => i.getKeyword() === 'USER');
  const user = users.at(-1)?.getArgumentsContent()?.trim();
  if (user === undefined) violations.push('the final stage sets no USER (it would run as root)');
  else if (!/^\d+(:\d+)?$/.test(user)) violations.push(`USER ${user} is not numeric (runAsNonRoot cannot verify a name)`);
  else if (user.split(':')[0] === '0') violations.push('USER 0 is root');

  const cmds = final.filter((i): i is Cmd => i instanceof Cmd);
  const cmd = cmds.at(-1);
  if (cmd === undefined) violations.push('the final stage has no CMD');
  else if (cmd.getOpeningBracket() === null) violations.push('CMD is in shell form (a shell would be PID 1 and swallow SIGTERM)');
  else {
    // A distroless Node base's entrypoint is node: the CMD is its arguments.
    const expected = distroless ? ['dist/main.js'] : ['node', 'dist/main.js'];
    const argv = cmd.getJSONStrings().map((s) => s.getJSONValue());
    if (JSON.stringify(argv) !== JSON.stringify(expected))
      violations.push(`CMD is ${JSON.stringify(argv)}, not ${JSON.stringify(expected)}`);
  }
  if (final.some((i) => i instanceof Entrypoint)) violations.push("the final stage has an ENTRYPOINT (the base's node must be PID 1)");
  if (instructions.some((i) => i.getKeyword() === 'HEALTHCHECK')) violations.push('HEALTHCHECK (Kubernetes ignores it; probes do the job)');

  const allRuns = all.flatMap(runs);
  if (allRuns.some((r) => /\bnpm\s+(install|i)\b/.test(r))) violations.push('npm install (not a lockfile install)');
  if (!allRuns.some((r) => /\bnpm\s+ci\b/.test(r))) violations.push('no npm ci (lockfile install)');
  for (const run of runs(final)) {
    if (/\bnpm\s+ci\b/.test(run) && !/--omit=dev/.test(run)) violations.push('the final stage installs dev dependencies');
  }
  // node_modules in the final stage must come from a stage that installed with --omit=dev.
  for (const copy of final.filter((i): i is Copy => i instanceof Copy && /node_modules/.test(i.getArgumentsContent() ?? ''))) {
    const from = copy.getFromFlag()?.getValue() ?? undefined;
    const source = all.find((s) => (s[0]?.getArgumentsContent() ?? '').split(/\s+/).at(-1) === from);
    if (source === undefined || !runs(source).some((r) => /\bnpm\s+ci\b.*--omit=dev/.test(r))) {
      violations.push(`node_modules copied from ${from ?? 'the build context'}, not from a --omit=dev install`);
    }
  }

  for (const i of instructions) {
    const names = i instanceof Env ? i.getProperties().map((p) => p.getName()) : i instanceof Arg ? [i.getProperty()?.getName() ?? ''] : [];
    for (const name of names)
      if (SECRET_NAME.test(name)) violations.push(`${i.getKeyword()} ${name} looks like a secret (image layers are readable)`);
  }

  const finalEnv = envOf(final);
  if (finalEnv.get('NODE_ENV') !== 'production') violations.push('the final stage does not set NODE_ENV=production');
  const exposed = final.filter((i) => i.getKeyword() === 'EXPOSE').flatMap((i) => (i.getArgumentsContent() ?? '').split(/\s+/));
  for (const port of ['8180', '8181']) if (!exposed.includes(port)) violations.push(`port ${port} is not exposed`);
  return violations;
}

describe('Dockerfile', () => {
  it('passes the dockerfile-utils linter without errors or warnings', () => {
    const diagnostics = validate(dockerfile);
    const shown = diagnostics.map((d) => `line ${d.range.start.line + 1}: ${d.message} (severity ${d.severity})`);
    expect(shown).toEqual([]);
  });

  it('meets the image policy', () => {
    expect(policyViolations(dockerfile)).toEqual([]);
  });

  it('builds with the same node flags that npm start passes', () => {
    const nodeOptions = /NODE_OPTIONS="([^"]+)"/.exec(dockerfile)?.[1];
    const start = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts.start;
    expect(nodeOptions).toBe('--max-semi-space-size=16 --expose-gc');
    expect(start).toBe(`node ${nodeOptions} dist/main.js`);
  });

  // jemalloc ignores a setting it does not know, with one line on stderr: a misspelt pair would
  // silently leave the image with the allocator's defaults.
  it.skipIf(lacks('jeprof'))(`preloads a jemalloc that takes every pair of the image's MALLOC_CONF as written${skipNote('jeprof')}`, () => {
    const env = envOf(stages(DockerfileParser.parse(dockerfile).getInstructions()).at(-1) ?? []);
    const conf = env.get('MALLOC_CONF') ?? '';
    expect(conf).toContain('lg_extent_max_active_fit:');
    const run = spawnSync(process.execPath, ['-e', '0'], {
      env: { PATH: process.env.PATH, LD_PRELOAD: env.get('LD_PRELOAD') ?? '', MALLOC_CONF: `${conf},stats_print:true` },
      encoding: 'utf8',
    });
    expect(run.status).toBe(0);
    expect(run.stderr).not.toMatch(/Invalid conf|cannot be preloaded/);
    // jemalloc's report at exit lists each option as it took it.
    for (const pair of conf.split(',')) {
      const [name, value] = pair.split(':');
      expect(run.stderr, pair).toMatch(new RegExp(`^\\s*opt\\.${name}: ${value}(\\s|$)`, 'm'));
    }
  });

  it('leaves out of the build context what the image must not contain', () => {
    const lines = dockerignore.split('\n').map((l) => l.trim());
    for (const entry of ['node_modules', '.git', 'dist', '.cache']) expect(lines).toContain(entry);
  });

  it('keeps in the build context every file a COPY from it names', () => {
    const copies = DockerfileParser.parse(dockerfile)
      .getInstructions()
      .filter((i): i is Copy => i instanceof Copy && i.getFromFlag() === null);
    const sources = copies.flatMap((c) => (c.getArgumentsContent() ?? '').split(/\s+/).slice(0, -1));
    expect(sources).toContain('scripts/bundle.mjs');
    const excluded = sources.filter((source) => ignoredByDockerignore(source, dockerignore) || !existsSync(join(root, source)));
    expect(excluded).toEqual([]);
  });
});

/**
 * Whether .dockerignore leaves `path` out of the build context: its rules in order, the last
 * that matches the path or a folder above it wins, `!` keeps. Plain names and `*` only (all this
 * project's file uses).
 */
function ignoredByDockerignore(path: string, content: string): boolean {
  const rules = content
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
  const parts = path.replace(/\/$/, '').split('/');
  const prefixes = parts.map((_, i) => parts.slice(0, i + 1).join('/'));
  let ignored = false;
  for (const rule of rules) {
    const keep = rule.startsWith('!');
    const pattern = new RegExp(`^${(keep ? rule.slice(1) : rule).replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*')}$`);
    if (prefixes.some((p) => pattern.test(p))) ignored = !keep;
  }
  return ignored;
}

describe('the image policy', () => {
  const good = `ARG NODE_IMAGE=node:24-bookworm-slim
ARG RUNTIME_IMAGE=gcr.io/distroless/nodejs24-debian12:nonroot
FROM --platform=$BUILDPLATFORM \${NODE_IMAGE} AS build
RUN npm ci
FROM --platform=$BUILDPLATFORM \${NODE_IMAGE} AS deps
RUN npm ci --omit=dev
FROM \${RUNTIME_IMAGE}
ENV NODE_ENV=production
COPY --from=deps /app/node_modules ./node_modules
USER 65532:65532
EXPOSE 8180 8181
CMD ["dist/main.js"]
`;

  it('accepts a small Dockerfile that follows it', () => {
    expect(policyViolations(good)).toEqual([]);
  });

  it.each([
    [
      'a single stage',
      good
        .split('\n')
        .filter((l) => !/^(FROM --platform|RUN npm ci$|RUN npm ci --omit)/.test(l))
        .join('\n'),
      /not multi-stage/,
    ],
    ['a slim runtime base', good.replace('gcr.io/distroless/nodejs24-debian12:nonroot', 'node:24-slim'), /not a distroless Node base/],
    [
      'a base named in FROM',
      good.replace('FROM ${RUNTIME_IMAGE}', 'FROM gcr.io/distroless/nodejs24-debian12:nonroot'),
      /names a base directly/,
    ],
    [
      'npm run on the target platform',
      good.replace('FROM --platform=$BUILDPLATFORM ${NODE_IMAGE} AS deps', 'FROM ${NODE_IMAGE} AS deps'),
      /target platform/,
    ],
    ['a RUN in the runtime stage', good.replace('USER 65532', 'RUN rm -rf /tmp\nUSER 65532'), /final stage runs commands/],
    ['a named user', good.replace('USER 65532:65532', 'USER node'), /not numeric/],
    ['root', good.replace('USER 65532:65532', 'USER 0:0'), /root/],
    ['no user', good.replace('USER 65532:65532\n', ''), /no USER/],
    ['a shell-form CMD', good.replace('CMD ["dist/main.js"]', 'CMD dist/main.js'), /shell form/],
    ['another command', good.replace('dist/main.js', 'dist/demo.js'), /not \["dist\/main.js"\]/],
    ['node twice', good.replace('CMD ["dist/main.js"]', 'CMD ["node", "dist/main.js"]'), /not \["dist\/main.js"\]/],
    ['an ENTRYPOINT', good.replace('CMD', 'ENTRYPOINT ["/bin/sh", "-c"]\nCMD'), /ENTRYPOINT/],
    ['a HEALTHCHECK', good.replace('CMD', 'HEALTHCHECK CMD node -e 1\nCMD'), /HEALTHCHECK/],
    ['npm install', good.replace('RUN npm ci\n', 'RUN npm install\n'), /npm install/],
    ['dev dependencies at run time', good.replace('--from=deps', '--from=build'), /not from a --omit=dev install/],
    [
      'a secret in ENV',
      good.replace('ENV NODE_ENV=production', 'ENV NODE_ENV=production CLIENT_SECRET=s3cr3t'),
      /CLIENT_SECRET looks like a secret/,
    ],
    ['a token in ARG', good.replace('AS build', 'AS build\nARG NPM_TOKEN'), /NPM_TOKEN looks like a secret/],
    ['no NODE_ENV', good.replace('ENV NODE_ENV=production\n', ''), /NODE_ENV=production/],
    ['a port missing', good.replace('EXPOSE 8180 8181', 'EXPOSE 8180'), /port 8181/],
  ])('refuses %s', (_name, content, message) => {
    const violations = policyViolations(content);
    expect(
      violations.some((v) => message.test(v)),
      violations.join('\n'),
    ).toBe(true);
  });
});
