import { afterEach, describe, expect, it } from 'vitest';
import { watchFile } from '../../src/core/watched-file.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { FakeLog } from '../helpers/fakes.js';

const PATH = '/etc/tls/ca.crt';

function setup(initialText: string | undefined) {
  const clock = new FakeClock();
  const log = new FakeLog();
  const file = { content: 'one' as string | Error };
  const changes: number[] = [];
  const errors: string[] = [];
  const stop = watchFile({
    path: PATH,
    what: 'CA_FILE',
    ...(initialText !== undefined ? { initialText } : {}),
    read: async () => {
      if (file.content instanceof Error) throw file.content;
      return file.content;
    },
    parse: (text) => {
      if (!/^[a-z]+$/.test(text)) throw new Error('not a word');
      return text.length;
    },
    onChange: (n) => {
      changes.push(n);
    },
    onError: (reason) => errors.push(reason),
    clock,
    log,
  });
  return { clock, log, file, changes, errors, stop };
}

const stops: (() => void)[] = [];
afterEach(() => stops.splice(0).forEach((s) => s()));

describe('watchFile', () => {
  it('hands a parsed change to onChange within 2 s, once', async () => {
    const t = setup('one');
    stops.push(t.stop);
    await t.clock.advance(3_000);
    expect(t.changes).toEqual([]);
    t.file.content = 'three';
    await t.clock.advance(2_000);
    await t.clock.advance(2_000);
    expect(t.changes).toEqual([5]);
  });

  it('keeps the previous value while the file is malformed, logs once, and reports the problem', async () => {
    const t = setup('one');
    stops.push(t.stop);
    t.file.content = 'not valid!';
    await t.clock.advance(5_000);
    expect(t.changes).toEqual([]);
    expect(t.errors).toEqual(['not a word']);
    expect(t.log.at('warn')).toHaveLength(1);
    expect(t.log.at('warn')[0]?.msg).toBe('CA_FILE is not usable; keeping the current one');
    t.file.content = 'four';
    await t.clock.advance(2_000);
    expect(t.changes).toEqual([4]);
  });

  it('keeps the previous value while the file cannot be read, naming the code', async () => {
    const t = setup('one');
    stops.push(t.stop);
    t.file.content = Object.assign(new Error('gone'), { code: 'ENOENT' });
    await t.clock.advance(5_000);
    expect(t.errors).toEqual(['ENOENT']);
    expect(t.log.at('warn')[0]?.obj).toMatchObject({ path: PATH, code: 'ENOENT' });
    expect(t.changes).toEqual([]);
  });

  it('says to name the file inside when a directory is put at the path', async () => {
    const t = setup('one');
    stops.push(t.stop);
    t.file.content = Object.assign(new Error('illegal operation on a directory'), { code: 'EISDIR' });
    await t.clock.advance(5_000);
    expect(t.errors).toEqual(['EISDIR']);
    expect(t.log.at('warn')[0]?.obj).toEqual({ path: PATH, code: 'EISDIR', hint: 'a directory: name the file inside it' });
  });

  it('takes the first read as the baseline when no initial text is given', async () => {
    const t = setup(undefined);
    stops.push(t.stop);
    await t.clock.advance(3_000);
    expect(t.changes).toEqual([]);
    t.file.content = 'seven';
    await t.clock.advance(2_000);
    expect(t.changes).toEqual([5]);
  });
});
