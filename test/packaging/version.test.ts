/**
 * One version (docs/releases.md, "How versions move"): the `version` of package.json is the one the
 * image's labels, the chart, `--version`, the `ticket_auth_proxy_build_info` metric and the newest
 * section of CHANGELOG.md carry.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Arg, DockerfileParser } from 'dockerfile-ast';
import { describe, expect } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { runCli } from '../helpers/index.js';
import { metricsText, sharedStack } from '../helpers/stack.js';
import { newestChangelogVersion } from './changelog.js';

const root = join(import.meta.dirname, '..', '..');
const read = (path: string): string => readFileSync(join(root, path), 'utf8');
const VERSION = (JSON.parse(read('package.json')) as { version: string }).version;

// SemVer 2.0.0's grammar (semver.org, "Is there a suggested regular expression").
const SEMVER =
  /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$/;

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

  it('is the newest section of CHANGELOG.md', () => {
    expect(newestChangelogVersion(read('CHANGELOG.md'))).toBe(VERSION);
  });
});
