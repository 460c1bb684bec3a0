/**
 * The SBOM (`npm run sbom`, docs/releases.md, "The SBOM") names exactly the npm packages a
 * production install puts in node_modules, each with its version, package URL and licence: the
 * install is made here as the Dockerfile makes it (`npm ci --omit=dev` from the lockfile) in a
 * directory of its own, and every package.json under its node_modules is read.
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..');

interface Component {
  type: string;
  group?: string;
  name: string;
  version: string;
  purl?: string;
  licenses?: unknown[];
}
interface Bom {
  bomFormat: string;
  specVersion: string;
  metadata: { component: { name: string; version: string } };
  components: Component[];
}

/** Every package installed under `dir` (node_modules nested in node_modules included), as name@version. */
function installedPackages(dir: string): Set<string> {
  const found = new Set<string>();
  const walk = (modules: string): void => {
    if (!existsSync(modules)) return;
    for (const entry of readdirSync(modules)) {
      if (entry.startsWith('.')) continue;
      const names = entry.startsWith('@') ? readdirSync(join(modules, entry)).map((n) => `${entry}/${n}`) : [entry];
      for (const name of names) {
        const manifest = join(modules, name, 'package.json');
        if (!existsSync(manifest)) continue;
        const pkg = JSON.parse(readFileSync(manifest, 'utf8')) as { name: string; version: string };
        found.add(`${pkg.name}@${pkg.version}`);
        walk(join(modules, name, 'node_modules'));
      }
    }
  };
  walk(join(dir, 'node_modules'));
  return found;
}

/** The package URL of an npm package (purl-spec, "npm": the scope's `@` percent-encoded). */
const purlOf = (name: string, version: string): string => `pkg:npm/${name.replace(/^@/, '%40')}@${version}`;

const nameOf = (c: Component): string => (c.group === undefined ? c.name : `${c.group}/${c.name}`);

let work: string;
let bom: Bom;
let installed: Set<string>;

beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), 'sbom-test-'));
  const out = execFileSync(process.execPath, [join(root, 'scripts', 'sbom.mjs'), join(work, 'sbom.cdx.json')], { encoding: 'utf8' });
  expect(out).toMatch(/CycloneDX 1\.6, \d+ npm packages, validated/);
  bom = JSON.parse(readFileSync(join(work, 'sbom.cdx.json'), 'utf8')) as Bom;
  const app = join(work, 'app');
  mkdirSync(app);
  for (const f of ['package.json', 'package-lock.json']) copyFileSync(join(root, f), join(app, f));
  execFileSync('npm', ['ci', '--omit=dev', '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error'], { cwd: app, stdio: 'pipe' });
  installed = installedPackages(app);
}, 180_000);

afterAll(() => {
  if (work !== undefined) rmSync(work, { recursive: true, force: true });
});

describe('npm run sbom', () => {
  it('writes a CycloneDX 1.6 document about this application at its version', () => {
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { name: string; version: string };
    expect({ format: bom.bomFormat, spec: bom.specVersion }).toEqual({ format: 'CycloneDX', spec: '1.6' });
    expect(bom.metadata.component).toMatchObject({ name: pkg.name, version: pkg.version });
  });

  it('names every package a production install holds, and nothing else', () => {
    expect(installed.size).toBeGreaterThan(0);
    const named = new Set(bom.components.map((c) => `${nameOf(c)}@${c.version}`));
    expect([...named].sort()).toEqual([...installed].sort());
  });

  it('gives each package its package URL and its licence', () => {
    for (const c of bom.components) {
      expect(c.purl, nameOf(c)).toBe(purlOf(nameOf(c), c.version));
      expect(c.licenses?.length ?? 0, `${nameOf(c)} has no licence`).toBeGreaterThan(0);
    }
  });
});
