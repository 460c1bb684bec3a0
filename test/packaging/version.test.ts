/**
 * One version (docs/releases.md, "How versions move"): the `version` of package.json is the one the
 * image's labels, the chart, `--version`, the `ticket_auth_proxy_build_info` metric and the top
 * section of CHANGELOG.md carry. Between releases it is the next version with `-dev` after it,
 * above every release, and that section is `Unreleased`; so a build from the repository is never
 * taken for a release.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Arg, DockerfileParser } from 'dockerfile-ast';
import { describe, expect } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { runCli } from '../helpers/index.js';
import { metricsText, sharedStack } from '../helpers/stack.js';
import { changelogLinks, changelogSections, newestChangelogSection } from './changelog.js';

const root = join(import.meta.dirname, '..', '..');
const read = (path: string): string => readFileSync(join(root, path), 'utf8');
const VERSION = (JSON.parse(read('package.json')) as { version: string }).version;

// SemVer 2.0.0's grammar (semver.org, "Is there a suggested regular expression").
const SEMVER =
  /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$/;

/** SemVer's order of two versions X.Y.Z (semver.org, "Precedence"): below, equal or above 0. */
function compareCore(a: string, b: string): number {
  const [x, y] = [a, b].map((v) => v.split('.').map(Number));
  return x![0]! - y![0]! || x![1]! - y![1]! || x![2]! - y![2]!;
}

const REPOSITORY_URL = /org\.opencontainers\.image\.source="([^"]+)"/.exec(read('Dockerfile'))![1]!;

const it = sharedStack();

describe('the version', () => {
  it('is a SemVer in package.json', () => {
    expect(VERSION).toMatch(SEMVER);
  });

  it("is the Dockerfile's VERSION, which the image's version label carries", () => {
    const instructions = DockerfileParser.parse(read('Dockerfile')).getInstructions();
    const args = instructions.filter((i): i is Arg => i instanceof Arg && i.getProperty()?.getName() === 'VERSION');
    expect(args.map((a) => a.getProperty()?.getValue())).toEqual([VERSION]);
    const labels = instructions.filter((i) => i.getKeyword() === 'LABEL').map((i) => i.getArgumentsContent() ?? '');
    expect(labels.join('\n')).toContain('org.opencontainers.image.version="${VERSION}"');
  });

  it("is the chart's version and appVersion", () => {
    const chart = parseYaml(read('helm/ticket-auth-proxy/Chart.yaml')) as { version: string; appVersion: string };
    expect({ version: chart.version, appVersion: chart.appVersion }).toEqual({ version: VERSION, appVersion: VERSION });
  });

  it('is what ticket-auth-proxy --version prints', async () => {
    const res = await runCli(['--version'], {});
    expect(res.code).toBe(0);
    expect(res.stdout).toBe(`${VERSION}\n`);
  });

  it('is the label of ticket_auth_proxy_build_info, at 1', async ({ shared: { proxy } }) => {
    const lines = (await metricsText(proxy)).split('\n').filter((l) => l.startsWith('ticket_auth_proxy_build_info'));
    expect(lines).toEqual([`ticket_auth_proxy_build_info{version="${VERSION}"} 1`]);
  });

  it('names the top section of CHANGELOG.md', () => {
    expect(newestChangelogSection(read('CHANGELOG.md'))?.version).toBe(VERSION);
  });

  it('is, between releases, the next version with -dev after it, above the newest release, its section Unreleased', () => {
    const text = read('CHANGELOG.md');
    const top = newestChangelogSection(text)!;
    const [newestRelease] = changelogSections(text);
    const m = /^(\d+\.\d+\.\d+)(-dev)?$/.exec(VERSION);
    expect(m, `${VERSION} is X.Y.Z (a release) or X.Y.Z-dev (between releases)`).not.toBeNull();
    if (m![2] === undefined) {
      // A release's tree: its dated section on top (the release workflow refuses it otherwise).
      expect(top.date).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    } else {
      expect(top.date).toBe('Unreleased');
      expect(compareCore(m![1]!, newestRelease!.version), `${VERSION} above ${newestRelease!.version}`).toBeGreaterThan(0);
    }
  });

  it('lists the releases newest first in CHANGELOG.md, each with a link to its release, the version between them to what it adds', () => {
    const text = read('CHANGELOG.md');
    const released = changelogSections(text).map((s) => s.version);
    expect(released).toEqual([...released].sort((a, b) => compareCore(b, a)));
    expect(new Set(released).size).toBe(released.length);
    const expected = new Map(released.map((v) => [v, `${REPOSITORY_URL}/releases/tag/v${v}`]));
    const top = newestChangelogSection(text)!;
    if (top.date === 'Unreleased') expected.set(top.version, `${REPOSITORY_URL}/compare/v${released[0]}...HEAD`);
    expect(changelogLinks(text)).toEqual(expected);
  });
});
