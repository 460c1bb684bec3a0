import { mkdir, mkdtemp, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/core/clock.js';
import { watchSecretFile } from '../../src/token/secret-file.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { FakeLog } from '../helpers/fakes.js';

const PATH = '/var/run/secrets/ticket/client-secret';

function enoent(): NodeJS.ErrnoException {
  return Object.assign(new Error(`ENOENT: no such file or directory, open '${PATH}'`), { code: 'ENOENT' });
}

function setup(initial = 'secret-one') {
  const clock = new FakeClock();
  const log = new FakeLog();
  const file: { content: string | Error } = { content: `${initial}\n` };
  const changes: string[] = [];
  let reads = 0;
  const stop = watchSecretFile({
    path: PATH,
    initial,
    clock,
    log,
    onChange: (secret) => changes.push(secret),
    read: (p) => {
      reads++;
      expect(p).toBe(PATH);
      return file.content instanceof Error ? Promise.reject(file.content) : Promise.resolve(file.content);
    },
  });
  return { clock, log, file, changes, stop, reads: () => reads };
}

const stops: (() => void)[] = [];
afterEach(() => {
  for (const stop of stops.splice(0)) stop();
});

describe('watchSecretFile with an injected read', () => {
  it('reports a changed secret within 2 s', async () => {
    const t = setup();
    stops.push(t.stop);
    await t.clock.advance(1_001);
    expect(t.changes).toEqual([]);
    t.file.content = 'secret-two\n';
    await t.clock.advance(2_000);
    expect(t.changes).toEqual(['secret-two']);
    await t.clock.advance(10_000);
    expect(t.changes).toEqual(['secret-two']);
  });

  it('logs no change at start for a file that ends in a newline, as most secret files do', async () => {
    const t = setup();
    stops.push(t.stop);
    await t.clock.advance(5_000);
    expect(t.changes).toEqual([]);
    expect(t.log.lines.map((l) => l.msg)).not.toContain('secret file changed');
  });

  it('trims white space and the trailing newline from what it reads', async () => {
    const t = setup();
    stops.push(t.stop);
    t.file.content = '\t secret-one  \r\n';
    await t.clock.advance(5_000);
    expect(t.changes).toEqual([]);
    t.file.content = '  secret-two\n\n';
    await t.clock.advance(2_000);
    expect(t.changes).toEqual(['secret-two']);
  });

  it('keeps the old secret and logs once while the file cannot be read', async () => {
    const t = setup();
    stops.push(t.stop);
    t.file.content = enoent();
    await t.clock.advance(10_000);
    expect(t.reads()).toBeGreaterThanOrEqual(5);
    expect(t.changes).toEqual([]);
    expect(t.log.at('warn')).toHaveLength(1);
    expect(t.log.at('warn')[0]?.obj).toMatchObject({ path: PATH, code: 'ENOENT' });
    t.file.content = 'secret-two\n';
    await t.clock.advance(2_000);
    expect(t.changes).toEqual(['secret-two']);
    expect(t.log.at('warn')).toHaveLength(1);
  });

  it('keeps the old secret and logs once while the file is empty', async () => {
    const t = setup();
    stops.push(t.stop);
    t.file.content = ' \n';
    await t.clock.advance(10_000);
    expect(t.changes).toEqual([]);
    expect(t.log.at('warn')).toHaveLength(1);
    t.file.content = 'secret-one\n';
    await t.clock.advance(2_000);
    expect(t.changes).toEqual([]);
    expect(t.log.at('warn')).toHaveLength(1);
  });

  it('never logs the secret', async () => {
    const t = setup();
    stops.push(t.stop);
    t.file.content = 'secret-two\n';
    await t.clock.advance(2_000);
    t.file.content = '';
    await t.clock.advance(2_000);
    expect(t.changes).toEqual(['secret-two']);
    expect(t.log.lines.length).toBeGreaterThan(0);
    expect(t.log.text()).not.toContain('secret-one');
    expect(t.log.text()).not.toContain('secret-two');
  });

  it('reads no more once stopped', async () => {
    const t = setup();
    await t.clock.advance(3_000);
    const reads = t.reads();
    t.stop();
    t.file.content = 'secret-two\n';
    await t.clock.advance(10_000);
    expect(t.reads()).toBe(reads);
    expect(t.changes).toEqual([]);
    expect(t.clock.pending).toBe(0);
  });
});

describe('watchSecretFile on a real directory', () => {
  it("sees Kubernetes' ..data symlink swap", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'secret-file-'));
    try {
      await mkdir(join(dir, '..2026_a'));
      await writeFile(join(dir, '..2026_a', 'secret'), 'secret-one\n');
      await symlink('..2026_a', join(dir, '..data'));
      await symlink(join('..data', 'secret'), join(dir, 'secret'));

      const changes: string[] = [];
      const log = new FakeLog();
      const stop = watchSecretFile({
        path: join(dir, 'secret'),
        initial: 'secret-one',
        clock: systemClock,
        log,
        onChange: (s) => changes.push(s),
      });
      stops.push(stop);

      await mkdir(join(dir, '..2026_b'));
      await writeFile(join(dir, '..2026_b', 'secret'), 'secret-two\n');
      await symlink('..2026_b', join(dir, '..data_tmp'));
      await rename(join(dir, '..data_tmp'), join(dir, '..data'));
      const swappedAt = Date.now();

      const deadline = swappedAt + 5_000;
      while (changes.length === 0 && Date.now() < deadline) await delay(20);
      expect(changes).toEqual(['secret-two']);
      expect(Date.now() - swappedAt).toBeLessThan(2_500);
      expect(log.at('warn')).toHaveLength(0);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
