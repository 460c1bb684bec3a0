// The SBOM of the runtime image, made by the Dockerfile's sbom stage: the npm SBOM of
// scripts/sbom.mjs (validated CycloneDX 1.6), with the Debian packages the runtime layer holds
// added as components, read from their dpkg status files (a distroless base lists each package in
// /var/lib/dpkg/status.d/<name>, and the build adds jemalloc's there). Plain Node, no dependency:
// the stage that runs it has no node_modules.
//
//   node scripts/sbom-image.mjs NPM_SBOM STATUS_DIR OUTPUT
//
// How a release uses it: docs/releases.md, "The SBOM".
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const [npmSbom, statusDir, output] = process.argv.slice(2);
if (output === undefined) {
  process.stderr.write('usage: node scripts/sbom-image.mjs NPM_SBOM STATUS_DIR OUTPUT\n');
  process.exit(2);
}

/** The paragraphs of a dpkg status or control file, each as field name to value. */
function paragraphs(text) {
  return text
    .split(/\n\s*\n/)
    .map((block) => {
      const fields = new Map();
      let last;
      for (const line of block.split('\n')) {
        if (/^\s/.test(line) && last !== undefined) fields.set(last, `${fields.get(last)}\n${line.trim()}`);
        else {
          const colon = line.indexOf(':');
          if (colon > 0) fields.set((last = line.slice(0, colon)), line.slice(colon + 1).trim());
        }
      }
      return fields;
    })
    .filter((fields) => fields.has('Package') && fields.has('Version'));
}

const debs = new Map();
for (const file of readdirSync(statusDir).sort()) {
  // distroless keeps each package's file list beside its status (<name>.md5sums).
  if (file.endsWith('.md5sums')) continue;
  for (const p of paragraphs(readFileSync(join(statusDir, file), 'utf8'))) {
    const name = p.get('Package');
    const version = p.get('Version');
    const arch = p.get('Architecture') ?? 'all';
    const purl = `pkg:deb/debian/${encodeURIComponent(name)}@${encodeURIComponent(version)}?arch=${arch}`;
    debs.set(purl, {
      type: 'library',
      'bom-ref': purl,
      name,
      version,
      ...(p.has('Maintainer') ? { supplier: { name: p.get('Maintainer') } } : {}),
      purl,
    });
  }
}
if (debs.size === 0) {
  process.stderr.write(`sbom-image: no Debian package in ${statusDir}\n`);
  process.exit(1);
}

const bom = JSON.parse(readFileSync(npmSbom, 'utf8'));
if (bom.bomFormat !== 'CycloneDX' || bom.specVersion !== '1.6') {
  process.stderr.write(`sbom-image: ${npmSbom} is not CycloneDX 1.6\n`);
  process.exit(1);
}
const npmCount = bom.components?.length ?? 0;
bom.components = [...(bom.components ?? []), ...debs.values()];
writeFileSync(output, `${JSON.stringify(bom, null, 2)}\n`);
process.stdout.write(`sbom-image: ${output}: ${npmCount} npm packages, ${debs.size} Debian packages\n`);
