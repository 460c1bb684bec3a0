import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/core/log.js';

describe('the logger', () => {
  it('censors a store password wherever a field names it, one level deep or at the top', () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    const log = createLogger('info', sink as unknown as Parameters<typeof createLogger>[1]);
    log.info({ password: 'top-level-pw', store: { password: 'nested-pw', tokenStorePassword: 'named-pw' } }, 'store settings');
    const text = lines.join('');
    for (const pw of ['top-level-pw', 'nested-pw', 'named-pw']) expect(text).not.toContain(pw);
    expect(text).toContain('[redacted]');
  });
});
