// Compares an image's SBOM with what the image holds (scripts/release-check.sh):
//
//   node scripts/lib/image-sbom-check.mjs ROOT        # ROOT: the image's mounted root filesystem
//
// Every npm package installed under ROOT/app/node_modules (nested and scoped ones included) must
// be a component of ROOT/app/sbom.cdx.json with the same name and version, and every npm
// component of the SBOM must be installed; every Debian package listed in
// ROOT/var/lib/dpkg/status.d must be a component too. The SBOM must be valid CycloneDX 1.6 (the
// validator of @cyclonedx/cyclonedx-npm's library). Prints one line of counts, or each
// difference and exits 1.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

const root = process.argv[2];
if (root === undefined) {
  process.stderr.write('usage: node scripts/lib/image-sbom-check.mjs ROOT\n');
  process.exit(2);
}
const problems = [];

/** name@version of every package under a node_modules folder, depth first. */
function installed(nodeModules, out = new Set()) {
  if (!existsSync(nodeModules)) return out;
  for (const entry of readdirSync(nodeModules)) {
    if (entry.startsWith('.')) continue;
    const dirs = entry.startsWith('@')
      ? readdirSync(join(nodeModules, entry)).map((e) => join(nodeModules, entry, e))
      : [join(nodeModules, entry)];
    for (const dir of dirs) {
      const manifest = join(dir, 'package.json');
      if (!existsSync(manifest)) continue;
      const { name, version } = JSON.parse(readFileSync(manifest, 'utf8'));
      out.add(`${name}@${version}`);
      installed(join(dir, 'node_modules'), out);
    }
  }
  return out;
}

const bom = JSON.parse(readFileSync(join(root, 'app', 'sbom.cdx.json'), 'utf8'));
const components = bom.components ?? [];
const fromPurl = (purl) => decodeURIComponent(/^pkg:npm\/(.+)@[^@]+$/.exec(purl.split('?')[0])?.[1] ?? '');
const inSbom = new Set(components.filter((c) => c.purl?.startsWith('pkg:npm/')).map((c) => `${fromPurl(c.purl)}@${c.version}`));
const inImage = installed(join(root, 'app', 'node_modules'));
for (const p of inImage) if (!inSbom.has(p)) problems.push(`installed in the image, missing from its SBOM: ${p}`);
for (const p of inSbom) if (!inImage.has(p)) problems.push(`in the SBOM, not installed in the image: ${p}`);

const debsInSbom = new Set(components.filter((c) => c.purl?.startsWith('pkg:deb/')).map((c) => c.name));
const statusDir = join(root, 'var', 'lib', 'dpkg', 'status.d');
const listed = existsSync(statusDir) ? readdirSync(statusDir).filter((f) => !f.endsWith('.md5sums')) : [];
if (listed.length === 0) problems.push(`the image lists no Debian package in ${statusDir}`);
for (const file of listed) {
  const name = /^Package: *(.+)$/m.exec(readFileSync(join(statusDir, file), 'utf8'))?.[1];
  if (name !== undefined && !debsInSbom.has(name)) problems.push(`Debian package ${name} is in the image, not in its SBOM`);
}

// The validator of the library @cyclonedx/cyclonedx-npm is built on (a dev dependency).
const require = createRequire(join(import.meta.dirname, '..', '..', 'node_modules', '@cyclonedx', 'cyclonedx-npm', 'package.json'));
const { Spec, Validation } = require('@cyclonedx/cyclonedx-library');
const invalid = await new Validation.JsonStrictValidator(Spec.Version.v1dot6).validate(JSON.stringify(bom));
if (invalid !== null) problems.push(`the SBOM is not valid CycloneDX 1.6: ${JSON.stringify(invalid).slice(0, 500)}`);

if (problems.length > 0) {
  process.stderr.write(`${problems.join('\n')}\n`);
  process.exit(1);
}
process.stdout.write(
  `${components.length} components (${inSbom.size} npm packages, each installed in the image at its version, and no other; ${debsInSbom.size} Debian packages), valid CycloneDX ${bom.specVersion}\n`,
);
