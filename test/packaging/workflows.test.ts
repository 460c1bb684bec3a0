/**
 * The GitHub Actions workflows (docs/releases.md): valid against the workflow schema
 * (`action-validator`), every action pinned by a full commit digest with its tag beside it, each
 * job given only the permissions its steps use, the release's signing jobs held in a GitHub
 * environment behind a job that finds the tag to be a release of main, and the release notes made
 * from CHANGELOG.md. And what the CI workflow runs, `.ci/run`: the Nodes it tests on, pinned
 * exactly in `.ci/node-versions`, which Renovate moves (docs/development.md, "CI").
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml, stringify } from 'yaml';
import { changelogSections } from './changelog.js';

const root = join(import.meta.dirname, '..', '..');
const dir = join(root, '.github', 'workflows');
const FILES = readdirSync(dir)
  .filter((f) => f.endsWith('.yml'))
  .sort();

interface Step {
  name?: string;
  uses?: string;
  run?: string;
  with?: Record<string, unknown>;
  env?: Record<string, string>;
}
interface Job {
  permissions?: Record<string, string>;
  steps?: Step[];
  uses?: string;
  needs?: string | string[];
  environment?: string;
}
interface Workflow {
  permissions?: Record<string, string>;
  jobs: Record<string, Job>;
}

const read = (file: string): string => readFileSync(join(dir, file), 'utf8');
const workflow = (file: string): Workflow => parseYaml(read(file)) as Workflow;

// Job permissions GitHub grants that the validator's schema (SchemaStore's, as its package
// bundles it) predates: `attestations` (docs.github.com, "Using artifact attestations to
// establish provenance for builds"). They are checked here instead, below.
const NEWER_PERMISSIONS = new Set(['attestations']);

// The one other write each job's purpose takes: publishing the GitHub release, starting the
// release workflow at a tag.
const OTHER_WRITES: Record<string, string[]> = { 'release.yml notes': ['contents'], 'release.yml rebuild': ['actions'] };

const work = mkdtempSync(join(tmpdir(), 'workflows-test-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** action-validator's verdict on a workflow's text: its exit status and what it printed. */
function validate(name: string, text: string): { status: number | null; output: string } {
  const file = join(work, name);
  writeFileSync(file, text);
  const res = spawnSync(process.execPath, [join(root, 'node_modules', '@action-validator', 'cli', 'cli.mjs'), file], {
    cwd: root,
    encoding: 'utf8',
  });
  return { status: res.status, output: `${res.stdout}${res.stderr}` };
}

describe('the workflows', () => {
  it('are the CI and release workflows', () => {
    expect(FILES).toEqual(['ci.yml', 'release.yml']);
  });

  it.each(FILES)('%s is valid by the workflow schema', (file) => {
    const parsed = workflow(file);
    for (const job of Object.values(parsed.jobs)) {
      for (const key of Object.keys(job.permissions ?? {})) if (NEWER_PERMISSIONS.has(key)) delete job.permissions![key];
    }
    const verdict = validate(file, stringify(parsed));
    expect(verdict.output).toBe('');
    expect(verdict.status).toBe(0);
  });

  it('the validator refuses a workflow the schema does not allow', () => {
    const parsed = workflow('ci.yml') as unknown as { jobs: Record<string, Record<string, unknown>> };
    parsed.jobs.test!['runs-onn'] = parsed.jobs.test!['runs-on'];
    delete parsed.jobs.test!['runs-on'];
    expect(validate('broken.yml', stringify(parsed)).status).toBe(1);
  });

  it.each(FILES)('%s pins every action by its full commit digest, its tag in a comment', (file) => {
    const lines = read(file)
      .split('\n')
      .filter((l) => /^\s*(-\s+)?uses:/.test(l));
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) {
      const m = /uses:\s*(\S+)\s*(?:#\s*(\S+))?\s*$/.exec(line);
      expect(m, line).not.toBeNull();
      const [, ref, comment] = m!;
      if (ref!.startsWith('./')) continue;
      expect(ref, `${line.trim()}: not pinned by a 40-hex commit`).toMatch(/^[\w.-]+\/[\w.-]+(\/[\w./-]+)?@[0-9a-f]{40}$/);
      expect(comment, `${line.trim()}: no tag comment`).toMatch(/^v\d+\.\d+\.\d+$/);
    }
  });

  it.each(FILES)('%s grants nothing at the top, and each job only what its steps use', (file) => {
    const parsed = workflow(file);
    expect(parsed.permissions).toEqual({});
    for (const [name, job] of Object.entries(parsed.jobs)) {
      const text = JSON.stringify(job.steps ?? []);
      const signs = /cosign (sign|attest)|actions\/attest/.test(text);
      const pushes = /"push":true|helm push/.test(text);
      const attests = /actions\/attest/.test(text);
      const granted = job.permissions ?? {};
      expect(granted['id-token'] === 'write', `${file} ${name}: id-token: write where it signs, nowhere else`).toBe(signs);
      expect(granted.packages === 'write', `${file} ${name}: packages: write where it pushes, nowhere else`).toBe(pushes);
      expect(granted.attestations === 'write', `${file} ${name}: attestations: write where it attests`).toBe(attests);
      const otherWrites = Object.entries(granted)
        .filter(([scope, level]) => level === 'write' && !['id-token', 'packages', 'attestations'].includes(scope))
        .map(([scope]) => scope);
      expect(otherWrites, `${file} ${name}: writes beyond its purpose`).toEqual(OTHER_WRITES[`${file} ${name}`] ?? []);
    }
  });
});

/** The GitHub environment that holds the release's signing jobs (docs/releases.md, "Protecting releases"). */
const ENVIRONMENT = 'release';

describe('the release workflow', () => {
  const jobs = workflow('release.yml').jobs;
  const signs = (job: Job): boolean => job.permissions?.['id-token'] === 'write';

  it(`runs every job that can sign in the environment ${ENVIRONMENT}, and no other job`, () => {
    const signing = Object.entries(jobs).filter(([, job]) => signs(job));
    expect(signing.map(([name]) => name).sort()).toEqual(['chart', 'image']);
    for (const [name, job] of Object.entries(jobs)) {
      expect(job.environment, `release.yml ${name}`).toBe(signs(job) ? ENVIRONMENT : undefined);
    }
  });

  it('builds, pushes and signs nothing before the verify job has passed, which can write nothing', () => {
    const verify = jobs.verify!;
    expect(Object.values(verify.permissions ?? {}).filter((level) => level !== 'read')).toEqual([]);
    for (const [name, job] of Object.entries(jobs)) {
      if (name === 'verify' || name === 'rebuild') continue;
      expect([job.needs ?? []].flat(), `release.yml ${name}`).toContain('verify');
    }
    // The checkout holds main's history, which the check below reads.
    expect(verify.steps![0]!.with).toMatchObject({ 'fetch-depth': 0, 'persist-credentials': false });
  });
});

describe("the release workflow's verify job", () => {
  const steps = (workflow('release.yml').jobs.verify?.steps ?? []).filter((s) => s.run !== undefined);
  const gitIn =
    (cwd: string) =>
    (...args: string[]): string =>
      execFileSync('git', ['-c', 'user.name=Release Test', '-c', 'user.email=release@example.invalid', ...args], {
        cwd,
        encoding: 'utf8',
      }).trim();

  // A repository as the checkout leaves it: main with a release (1.2.3), then a version between
  // releases (1.2.4-dev), then a version without its dated section (1.2.5); a branch with a commit
  // of its own, not on main.
  const origin = mkdtempSync(join(work, 'origin-'));
  const inOrigin = gitIn(origin);
  const commit = (version: string, changelog: string, extra = ''): string => {
    writeFileSync(join(origin, 'package.json'), JSON.stringify({ name: 'release-test', version }));
    writeFileSync(join(origin, 'CHANGELOG.md'), `# Changelog\n\n${changelog}`);
    writeFileSync(join(origin, 'other.txt'), extra);
    inOrigin('add', '-A');
    inOrigin('commit', '-q', '-m', `${version} ${extra}`);
    return inOrigin('rev-parse', 'HEAD');
  };
  inOrigin('init', '-q', '-b', 'main');
  const released = commit('1.2.3', '## [1.2.3] - 2026-01-02\n\n- One.\n');
  inOrigin('checkout', '-q', '-b', 'side');
  const offMain = commit('1.2.3', '## [1.2.3] - 2026-01-02\n\n- One.\n', 'not on main');
  inOrigin('checkout', '-q', 'main');
  const between = commit('1.2.4-dev', '## [1.2.4-dev] - Unreleased\n\n- Two.\n\n## [1.2.3] - 2026-01-02\n\n- One.\n');
  const undated = commit('1.2.5', '## [1.2.4-dev] - Unreleased\n\n- Two.\n\n## [1.2.3] - 2026-01-02\n\n- One.\n');
  const checkout = mkdtempSync(join(work, 'checkout-'));
  execFileSync('git', ['clone', '-q', origin, checkout]);

  /** The job's steps in order, as GitHub runs them, at the commit `sha` for the ref `ref`; the first that fails ends it. */
  function verifyAt(ref: string, sha: string): { status: number | null; output: string; version?: string } {
    gitIn(checkout)('checkout', '-q', '--detach', sha);
    const outputFile = join(work, `github-output-${sha}-${ref.replace(/\W/g, '_')}`);
    writeFileSync(outputFile, '');
    let output = '';
    for (const step of steps) {
      const res = spawnSync('bash', ['--noprofile', '--norc', '-eo', 'pipefail', '-c', step.run!], {
        cwd: checkout,
        encoding: 'utf8',
        env: { PATH: process.env.PATH!, GITHUB_REF: ref, GITHUB_SHA: sha, GITHUB_OUTPUT: outputFile },
      });
      output += `${res.stdout}${res.stderr}`;
      if (res.status !== 0) return { status: res.status, output };
    }
    const version = /^version=(.*)$/m.exec(readFileSync(outputFile, 'utf8'))?.[1];
    return { status: 0, output, version };
  }

  it("passes a tag vX.Y.Z at a commit of main whose package.json says X.Y.Z, with CHANGELOG.md's dated section, and hands on X.Y.Z", () => {
    expect(verifyAt('refs/tags/v1.2.3', released)).toEqual({ status: 0, output: `v1.2.3 is at ${released}, on main\n`, version: '1.2.3' });
  });

  it('fails a tag whose commit is not on main, naming the tag and the commit', () => {
    const res = verifyAt('refs/tags/v1.2.3', offMain);
    expect(res.status).toBe(1);
    expect(res.output).toBe(
      `::error::v1.2.3 is at ${offMain}, a commit that is not on main: a release is tagged on a commit of main (docs/releases.md, "Protecting releases")\n`,
    );
  });

  it('fails a tree that carries a version between releases, whether the tag names the release or the pre-release', () => {
    for (const tag of ['v1.2.4', 'v1.2.4-dev']) {
      const res = verifyAt(`refs/tags/${tag}`, between);
      expect(res.status, tag).toBe(1);
      expect(res.output, tag).toContain(`::error::package.json's version at ${tag} is 1.2.4-dev, a version between releases`);
    }
  });

  it("fails a tag that is not package.json's version, a branch, and a version without its dated CHANGELOG.md section", () => {
    expect(verifyAt('refs/tags/v1.2.2', released)).toMatchObject({
      status: 1,
      output: "::error::a release runs at the tag v1.2.3 (package.json's version), not at v1.2.2\n",
    });
    expect(verifyAt('refs/heads/main', released)).toMatchObject({
      status: 1,
      output: '::error::a release runs at a tag vX.Y.Z, not at refs/heads/main\n',
    });
    expect(verifyAt('refs/tags/v1.2.5', undated)).toMatchObject({
      status: 1,
      output: '::error::CHANGELOG.md has no section "## [1.2.5] - YYYY-MM-DD" for the release v1.2.5\n',
    });
  });
});

describe('the release notes', () => {
  const step = workflow('release.yml').jobs.notes!.steps!.find((s) => s.name === 'Release notes from CHANGELOG.md')!;

  it("are CHANGELOG.md's section of the version, with the image and the chart by digest", () => {
    const newest = changelogSections(readFileSync(join(root, 'CHANGELOG.md'), 'utf8'))[0]!;
    const cwd = mkdtempSync(join(work, 'notes-'));
    writeFileSync(join(cwd, 'CHANGELOG.md'), readFileSync(join(root, 'CHANGELOG.md')));
    const env = {
      PATH: process.env.PATH!,
      IMAGE: 'ghcr.io/ticket-auth-proxy/ticket-auth-proxy',
      CHARTS: 'oci://ghcr.io/ticket-auth-proxy/charts',
      GITHUB_REPOSITORY: 'ticket-auth-proxy/ticket-auth-proxy',
      VERSION: newest.version,
      IMAGE_DIGEST: `sha256:${'a'.repeat(64)}`,
      CHART_DIGEST: `sha256:${'b'.repeat(64)}`,
    };
    execFileSync('bash', ['-e', '-c', step.run!], { cwd, env });
    const notes = readFileSync(join(cwd, 'notes.md'), 'utf8');
    expect(notes.trim().startsWith(newest.body)).toBe(true);
    expect(notes).toContain(`ghcr.io/ticket-auth-proxy/ticket-auth-proxy@sha256:${'a'.repeat(64)}`);
    expect(notes).toContain(`ghcr.io/ticket-auth-proxy/charts/ticket-auth-proxy@sha256:${'b'.repeat(64)}`);
    expect(notes).not.toContain('## [');
  });

  it('fail the release for a version CHANGELOG.md has no section for', () => {
    const cwd = mkdtempSync(join(work, 'notes-'));
    writeFileSync(join(cwd, 'CHANGELOG.md'), readFileSync(join(root, 'CHANGELOG.md')));
    const res = spawnSync('bash', ['-e', '-c', step.run!], { cwd, env: { PATH: process.env.PATH!, VERSION: '99.0.0' }, encoding: 'utf8' });
    expect(res.status).toBe(1);
    expect(res.stdout).toContain('CHANGELOG.md has no section [99.0.0]');
  });
});

describe('.ci/run and the Nodes it tests on', () => {
  const run = join(root, '.ci', 'run');
  const pinsText = readFileSync(join(root, '.ci', 'node-versions'), 'utf8');
  const pins = pinsText.split('\n').filter((l) => l.trim() !== '' && !l.startsWith('#'));
  const engines = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { engines: { node: string } }).engines.node;
  const lowest = /^>=\s*(\d+)$/.exec(engines)![1]!;
  const image = /^ARG NODE_IMAGE=node:(\d+)-/m.exec(readFileSync(join(root, 'Dockerfile'), 'utf8'))![1]!;
  const majors = [...new Set([lowest, image])];
  const versionOf = (major: string): string => pins.find((p) => p.startsWith(`node@${major}.`))!.slice('node@'.length);

  /** A cache as .ci/run keeps it, whose node of each major says `version` (a stand-in: the real one is a 50 MB download). */
  function cacheWith(versions: string[]): string {
    const cache = mkdtempSync(join(work, 'ci-cache-'));
    for (const version of versions) {
      const bin = join(cache, 'ticket-auth-proxy-ci', `node${version.split('.')[0]}`, 'node_modules', 'node', 'bin');
      mkdirSync(bin, { recursive: true });
      writeFileSync(join(bin, 'node'), `#!/bin/sh\necho v${version}\n`, { mode: 0o755 });
    }
    return cache;
  }

  // An npm registry that refuses every connection: a port just closed.
  let registry: string;
  beforeAll(async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    registry = `http://127.0.0.1:${(closed.address() as AddressInfo).port}/`;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
  });

  /** `.ci/run --nodes-only` (of the repository, or of a copy) with that cache and that registry. */
  function nodesOnly(cache: string, script = run): { status: number | null; output: string } {
    const res = spawnSync('bash', [script, '--nodes-only'], {
      encoding: 'utf8',
      // Only stops a hung run.
      timeout: 60_000,
      env: {
        PATH: process.env.PATH!,
        HOME: cache,
        XDG_CACHE_HOME: cache,
        npm_config_registry: registry,
        npm_config_cache: join(cache, 'npm'),
        npm_config_fetch_retries: '0',
      },
    });
    return { status: res.status, output: `${res.stdout}${res.stderr}` };
  }

  it("pins one exact version of each major it runs, engines' lowest and the image's, and nothing else", () => {
    expect(pins.map((p) => /^node@(\d+)\.\d+\.\d+$/.exec(p)?.[1])).toEqual(majors);
  });

  it("has Renovate move each pin within its major, as a version of the npm registry's node package", () => {
    const renovate = JSON.parse(readFileSync(join(root, '.github', 'renovate.json'), 'utf8')) as {
      customManagers: {
        customType: string;
        managerFilePatterns: string[];
        matchStrings: string[];
        datasourceTemplate: string;
        depNameTemplate?: string;
      }[];
      packageRules: { matchFileNames?: string[]; matchUpdateTypes?: string[]; enabled?: boolean }[];
    };
    const managers = renovate.customManagers.filter((m) =>
      m.managerFilePatterns.some((p) => /^\/.*\/$/.test(p) && new RegExp(p.slice(1, -1)).test('.ci/node-versions')),
    );
    expect(managers).toHaveLength(1);
    const manager = managers[0]!;
    expect([manager.customType, manager.datasourceTemplate]).toEqual(['regex', 'npm']);
    // Renovate runs each matchString over the whole file with the g flag alone (no m).
    const found = manager.matchStrings.flatMap((s) =>
      [...pinsText.matchAll(new RegExp(s, 'g'))].map((m) => `${m.groups!.depName ?? manager.depNameTemplate}@${m.groups!.currentValue}`),
    );
    expect(found).toEqual(pins);
    const majorsOff = renovate.packageRules.filter(
      (r) => r.matchFileNames?.includes('.ci/node-versions') && r.matchUpdateTypes?.includes('major') && r.enabled === false,
    );
    expect(majorsOff).toHaveLength(1);
  });

  it('uses the pinned Nodes it has, asking the registry nothing', () => {
    const res = nodesOnly(cacheWith(majors.map(versionOf)));
    expect(res.output).not.toContain('installing');
    for (const major of majors) {
      expect(res.output).toContain(`ci: Node ${major}: `);
      expect(res.output).toContain(`/node${major}/node_modules/node/bin (v${versionOf(major)})`);
    }
    expect(res.status).toBe(0);
  });

  it('replaces a cached Node that is not the pinned one, and fails naming the pin when the registry cannot give it', () => {
    const cache = cacheWith([`${lowest}.0.0`, ...majors.filter((m) => m !== lowest).map(versionOf)]);
    const res = nodesOnly(cache);
    expect(res.output).toContain(`ci: installing node@${versionOf(lowest)} from the npm registry`);
    expect(res.output).toContain(`(cached: ${lowest}.0.0)`);
    expect(res.output).toContain(
      `ci: cannot install node@${versionOf(lowest)} (pinned in .ci/node-versions) from the npm registry (${registry})`,
    );
    expect(res.output).not.toContain(`ci: Node ${lowest}: `);
    expect(res.status).toBe(1);
    // The cache keeps what it had.
    const kept = join(cache, 'ticket-auth-proxy-ci', `node${lowest}`, 'node_modules', 'node', 'bin', 'node');
    expect(execFileSync(kept, ['--version'], { encoding: 'utf8' })).toBe(`v${lowest}.0.0\n`);
  });

  it('refuses a pin file that lacks a major it runs or pins one it does not', () => {
    const copy = mkdtempSync(join(work, 'ci-copy-'));
    mkdirSync(join(copy, '.ci'));
    for (const f of ['package.json', 'Dockerfile', '.ci/run']) writeFileSync(join(copy, f), readFileSync(join(root, f)));
    const attempt = (text: string): { status: number | null; output: string } => {
      writeFileSync(join(copy, '.ci', 'node-versions'), text);
      return nodesOnly(copy, join(copy, '.ci', 'run'));
    };
    const others = pins.filter((p) => !p.startsWith(`node@${image}.`)).join('\n');
    expect(attempt(`${others}\n`)).toEqual({ status: 2, output: expect.stringContaining(`pins no Node ${image}`) });
    expect(attempt(`${pinsText}node@99.1.2\n`)).toEqual({
      status: 2,
      output: expect.stringContaining('pins node@99.1.2, but .ci/run runs Node'),
    });
    expect(attempt(`${pinsText}node@${lowest}\n`)).toEqual({
      status: 2,
      output: expect.stringContaining(`"node@${lowest}" is not node@X.Y.Z`),
    });
  });
});
