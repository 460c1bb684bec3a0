/**
 * The GitHub Actions workflows (docs/releases.md): valid against the workflow schema
 * (`action-validator`), every action pinned by a full commit digest with its tag beside it, each
 * job given only the permissions its steps use, and the release notes made from CHANGELOG.md.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
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
