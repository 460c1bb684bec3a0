import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { FORMAT_VERSION } from '../../src/store/slot-key.js';
import { functionLibrary, LIBRARY_NAME, LIBRARY_REVISION, SCRIPTS, VERSION_FUNCTION } from '../../src/store/scripts.js';

describe("the store's scripts and their function library", () => {
  it('carries a revision that changes with its scripts, so a library an earlier release loaded is refused', () => {
    // Any change of a script changes this digest. Raise LIBRARY_REVISION with it (a proxy then
    // refuses the library loaded from the release before and asks for it to be loaded again), and
    // write the new digest here.
    const digest = createHash('sha256').update(functionLibrary()).digest('hex');
    expect({ revision: LIBRARY_REVISION, digest }).toEqual({
      revision: 2,
      digest: '1981ab476cb7bbcbb439ac85acb5008fe479f30182007669c396503735a9bfdb',
    });
  });

  it('answers the key format version and the revision from its version function, and names every script', () => {
    const library = functionLibrary();
    expect(library.startsWith(`#!lua name=${LIBRARY_NAME}\n`)).toBe(true);
    expect(library).toContain(
      `function_name='${VERSION_FUNCTION}', flags={'no-writes'}, callback=function() return {'${FORMAT_VERSION}', ${LIBRARY_REVISION}} end}`,
    );
    for (const script of Object.values(SCRIPTS)) expect(library).toContain(`function_name='${LIBRARY_NAME}_${script.name}'`);
  });
});
