// The SBOM of the production dependencies: CycloneDX 1.6 JSON, made from package-lock.json alone
// (what `npm ci --omit=dev` installs, whatever node_modules holds here) by @cyclonedx/cyclonedx-npm,
// and validated against the CycloneDX 1.6 schema by the tool itself. The tool skips validation,
// with a warning only, when its validator cannot load: here that is a failure.
//
//   npm run sbom                    # writes dist/sbom.cdx.json
//   npm run sbom -- FILE            # writes FILE
//
// How a release uses it: docs/releases.md, "The SBOM".
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

const root = join(import.meta.dirname, '..');
const output = resolve(process.argv[2] ?? join(root, 'dist', 'sbom.cdx.json'));
// The package exports no path to its command; its bin entry is this file.
const cli = join(root, 'node_modules', '@cyclonedx', 'cyclonedx-npm', 'bin', 'cyclonedx-npm-cli.js');

mkdirSync(dirname(output), { recursive: true });
const run = spawnSync(
  process.execPath,
  [
    cli,
    '--omit',
    'dev',
    '--package-lock-only',
    '--spec-version',
    '1.6',
    '--output-format',
    'JSON',
    '--flatten-components',
    '--output-reproducible',
    '--validate',
    // At this verbosity the tool says whether the BOM was validated.
    '-vv',
    '--output-file',
    output,
    join(root, 'package.json'),
  ],
  { cwd: root, encoding: 'utf8' },
);
const said = `${run.stdout}\n${run.stderr}`;
const fail = (message) => {
  const errors = said.split('\n').filter((l) => /^(ERROR|WARN)/.test(l));
  process.stderr.write(`sbom: ${message}${errors.length > 0 ? `\n${errors.join('\n')}` : ''}\n`);
  process.exit(1);
};
if (run.error !== undefined) fail(`could not run cyclonedx-npm: ${run.error.message}`);
if (run.status !== 0) fail(`cyclonedx-npm exited ${run.status}`);
if (!said.includes('BOM result appears valid')) fail('cyclonedx-npm did not validate the BOM (its validator could not load)');

const bom = JSON.parse(readFileSync(output, 'utf8'));
if (bom.bomFormat !== 'CycloneDX' || bom.specVersion !== '1.6')
  fail(`${output} is not CycloneDX 1.6 (got ${bom.bomFormat} ${bom.specVersion})`);
process.stdout.write(`sbom: ${output}: CycloneDX ${bom.specVersion}, ${bom.components?.length ?? 0} npm packages, validated\n`);
