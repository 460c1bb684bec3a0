/**
 * The comparison `npm run release:check` makes between an image and its SBOM
 * (scripts/lib/image-sbom-check.mjs; docs/releases.md, "The SBOM"), on an image root laid out
 * here: node_modules with a scoped and a nested package, a distroless-style dpkg status.d.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

const script = join(import.meta.dirname, '..', '..', 'scripts', 'lib', 'image-sbom-check.mjs');

const npm = (group: string | undefined, name: string, version: string) => {
  const full = group === undefined ? name : `${group}/${name}`;
  const purl = `pkg:npm/${group === undefined ? '' : `${encodeURIComponent(group)}/`}${name}@${version}`;
  return { type: 'library', ...(group === undefined ? {} : { group }), name, version, purl, 'bom-ref': `${full}@${version}` };
};
const deb = (name: string, version: string) => {
  const purl = `pkg:deb/debian/${name}@${version}?arch=amd64`;
  return { type: 'library', name, version, purl, 'bom-ref': purl };
};

describe("an image's SBOM against what the image holds", () => {
  let root: string;
  const install = (path: string, name: string, version: string): void => {
    mkdirSync(join(root, 'app', path), { recursive: true });
    writeFileSync(join(root, 'app', path, 'package.json'), JSON.stringify({ name, version }));
  };
  const sbom = (components: object[]): void =>
    writeFileSync(
      join(root, 'app', 'sbom.cdx.json'),
      JSON.stringify({ bomFormat: 'CycloneDX', specVersion: '1.6', version: 1, components }),
    );
  const check = () => spawnSync(process.execPath, [script, root], { encoding: 'utf8' });

  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'image-sbom-'));
    install('node_modules/undici', 'undici', '8.12.4');
    install('node_modules/@pinojs/redact', '@pinojs/redact', '0.4.0');
    install('node_modules/undici/node_modules/lru-cache', 'lru-cache', '10.4.3');
    mkdirSync(join(root, 'var', 'lib', 'dpkg', 'status.d'), { recursive: true });
    writeFileSync(join(root, 'var', 'lib', 'dpkg', 'status.d', 'libc6'), 'Package: libc6\nVersion: 2.36-9\nArchitecture: amd64\n');
    writeFileSync(join(root, 'var', 'lib', 'dpkg', 'status.d', 'libc6.md5sums'), '');
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  const matching = [
    npm(undefined, 'undici', '8.12.4'),
    npm('@pinojs', 'redact', '0.4.0'),
    npm(undefined, 'lru-cache', '10.4.3'),
    deb('libc6', '2.36-9'),
  ];

  it('passes when the SBOM names every installed package at its version and nothing else', () => {
    sbom(matching);
    const result = check();
    expect(result.status, result.stderr).toBe(0);
    expect(result.stdout).toContain('4 components (3 npm packages');
    expect(result.stdout).toContain('1 Debian packages');
  });

  it('fails on a nested package the SBOM leaves out', () => {
    sbom(matching.filter((c) => c.name !== 'lru-cache'));
    const result = check();
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('installed in the image, missing from its SBOM: lru-cache@10.4.3');
  });

  it('fails on a version the image does not hold, and on a package it does not hold', () => {
    sbom([...matching.filter((c) => c.name !== 'undici'), npm(undefined, 'undici', '8.12.3'), npm(undefined, 'left-pad', '1.3.0')]);
    const result = check();
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('missing from its SBOM: undici@8.12.4');
    expect(result.stderr).toContain('in the SBOM, not installed in the image: undici@8.12.3');
    expect(result.stderr).toContain('in the SBOM, not installed in the image: left-pad@1.3.0');
  });

  it('fails on a Debian package of the image the SBOM leaves out', () => {
    sbom(matching.filter((c) => c.name !== 'libc6'));
    const result = check();
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('Debian package libc6 is in the image, not in its SBOM');
  });

  it('fails on an SBOM that is not valid CycloneDX 1.6', () => {
    sbom(matching.map((c) => ({ ...c, type: 'gadget' })));
    const result = check();
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('not valid CycloneDX 1.6');
  });
});
