/**
 * The image's SBOM (scripts/sbom-image.mjs, the Dockerfile's sbom stage; docs/releases.md, "The
 * SBOM"): the npm SBOM with the runtime layer's Debian packages added, read from dpkg status
 * files laid out as a distroless base lays them out (one file a package in status.d, with
 * <name>.md5sums files beside them). The whole image is compared with its SBOM by
 * `npm run release:check`.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

const script = join(import.meta.dirname, '..', '..', 'scripts', 'sbom-image.mjs');

interface Component {
  type: string;
  name: string;
  version: string;
  purl: string;
  'bom-ref': string;
  supplier?: { name: string };
}

describe('the image SBOM', () => {
  let dir: string;
  const npmComponent = { type: 'library', name: 'undici', version: '8.12.4', purl: 'pkg:npm/undici@8.12.4', 'bom-ref': 'undici@8.12.4' };
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'sbom-image-'));
    mkdirSync(join(dir, 'status.d'));
    writeFileSync(join(dir, 'npm.cdx.json'), JSON.stringify({ bomFormat: 'CycloneDX', specVersion: '1.6', components: [npmComponent] }));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const run = () => spawnSync(process.execPath, [script, 'npm.cdx.json', 'status.d', 'sbom.cdx.json'], { cwd: dir, encoding: 'utf8' });

  it('adds each Debian package of the status files, with its version, architecture and package URL', () => {
    writeFileSync(
      join(dir, 'status.d', 'libc6'),
      'Package: libc6\nVersion: 2.36-9+deb12u13\nArchitecture: arm64\nMaintainer: GNU Libc Maintainers <debian-glibc@lists.debian.org>\nDescription: GNU C Library\n shared libraries\n',
    );
    writeFileSync(join(dir, 'status.d', 'libc6.md5sums'), 'd41d8cd98f00b204e9800998ecf8427e  lib/ld-linux-aarch64.so.1\n');
    writeFileSync(join(dir, 'status.d', 'libjemalloc2'), 'Package: libjemalloc2\nVersion: 5.3.0-1\nArchitecture: arm64\n');
    const result = run();
    expect(result.status, result.stderr).toBe(0);
    const bom = JSON.parse(readFileSync(join(dir, 'sbom.cdx.json'), 'utf8')) as { specVersion: string; components: Component[] };
    expect(bom.specVersion).toBe('1.6');
    expect(bom.components).toEqual([
      npmComponent,
      {
        type: 'library',
        'bom-ref': 'pkg:deb/debian/libc6@2.36-9%2Bdeb12u13?arch=arm64',
        name: 'libc6',
        version: '2.36-9+deb12u13',
        supplier: { name: 'GNU Libc Maintainers <debian-glibc@lists.debian.org>' },
        purl: 'pkg:deb/debian/libc6@2.36-9%2Bdeb12u13?arch=arm64',
      },
      {
        type: 'library',
        'bom-ref': 'pkg:deb/debian/libjemalloc2@5.3.0-1?arch=arm64',
        name: 'libjemalloc2',
        version: '5.3.0-1',
        purl: 'pkg:deb/debian/libjemalloc2@5.3.0-1?arch=arm64',
      },
    ]);
    expect(result.stdout).toContain('1 npm packages, 2 Debian packages');
  });

  it('fails when the runtime base lists no package (a base that is not what the build expects)', () => {
    writeFileSync(join(dir, 'status.d', 'libc6.md5sums'), '');
    const result = run();
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('no Debian package in status.d');
  });
});
