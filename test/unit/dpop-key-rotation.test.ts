import { afterEach, describe, expect, it } from 'vitest';
import { loadDpopKey, type DpopKey } from '../../src/token/dpop/dpop-key.js';
import { watchDpopKeyFile } from '../../src/token/dpop/key-rotation.js';
import { createDpopProver } from '../../src/token/dpop/proof.js';
import { BAD_PEMS, PEMS } from '../helpers/dpop-keys.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { FakeLog } from '../helpers/fakes.js';

const PATH = '/var/run/secrets/dpop/key.pem';
const HTU = 'https://gw.example.com/api/v1/t';

function jwkOf(proof: string): unknown {
  return (JSON.parse(Buffer.from(proof.split('.')[0]!, 'base64url').toString()) as { jwk: unknown }).jwk;
}

function setup(alg?: 'ES256') {
  const clock = new FakeClock();
  const log = new FakeLog();
  const file = { content: PEMS['P-256'] as string | Error };
  const first = loadDpopKey(PEMS['P-256']);
  const prover = createDpopProver({ key: first, clock });
  const rotated: DpopKey[] = [];
  const errors: string[] = [];
  const stop = watchDpopKeyFile({
    path: PATH,
    initialText: PEMS['P-256'],
    alg,
    prover,
    onRotate: (key) => rotated.push(key),
    onError: (reason) => errors.push(reason),
    clock,
    log,
    read: async () => {
      if (file.content instanceof Error) throw file.content;
      return file.content;
    },
  });
  stops.push(stop);
  return { clock, log, file, first, prover, rotated, errors };
}

const stops: (() => void)[] = [];
afterEach(() => stops.splice(0).forEach((s) => s()));

describe('a DPOP_KEY_FILE rotation', () => {
  it('makes the new key the current one within 2 s and reports it once, naming only its thumbprint', async () => {
    const t = setup();
    await t.clock.advance(3_000);
    expect(t.rotated).toEqual([]);
    t.file.content = PEMS.ed25519;
    await t.clock.advance(2_000);
    await t.clock.advance(2_000);
    expect(t.rotated.map((k) => k.alg)).toEqual(['EdDSA']);
    expect(t.prover.key().alg).toBe('EdDSA');
    expect(jwkOf(t.prover.proof('GET', HTU))).toEqual(loadDpopKey(PEMS.ed25519).jwk);
    // A token bound to the first key is still proven with it.
    expect(jwkOf(t.prover.proof('GET', HTU, { key: t.first }))).toEqual(t.first.jwk);
    expect(t.log.at('info').map((l) => l.msg)).toContain('DPoP key replaced');
    expect(t.log.text()).not.toContain('PRIVATE KEY');
  });

  it('keeps the current key while the file holds no usable key, logging the reason and never the content', async () => {
    const t = setup();
    t.file.content = BAD_PEMS.rsa1024;
    await t.clock.advance(5_000);
    expect(t.rotated).toEqual([]);
    expect(t.prover.key()).toBe(t.first);
    expect(t.errors).toEqual(['holds an RSA key of 1024 bits; at least 2048 are required']);
    expect(t.log.text()).not.toContain('PRIVATE KEY');
    t.file.content = Object.assign(new Error('gone'), { code: 'ENOENT' });
    await t.clock.advance(2_000);
    expect(t.errors).toEqual(['holds an RSA key of 1024 bits; at least 2048 are required', 'ENOENT']);
    t.file.content = PEMS.rsa;
    await t.clock.advance(2_000);
    expect(t.rotated.map((k) => k.alg)).toEqual(['PS256']);
  });

  it('refuses a new key that cannot sign DPOP_ALG, keeping the current one', async () => {
    const t = setup('ES256');
    t.file.content = PEMS['P-384'];
    await t.clock.advance(3_000);
    expect(t.rotated).toEqual([]);
    expect(t.errors[0]).toContain('cannot sign ES256');
  });

  it('reports nothing when the file is rewritten with the same key', async () => {
    const t = setup();
    t.file.content = `${PEMS['P-256']}\n`;
    await t.clock.advance(3_000);
    expect(t.rotated).toEqual([]);
    expect(t.log.at('info')).toEqual([]);
  });
});
