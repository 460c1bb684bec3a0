import { describe, expect, it } from 'vitest';
import { startMemoryRelease } from '../../src/overload/memory-release.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { FakeLog } from '../helpers/fakes.js';

const MB = 1024 * 1024;

/** A proxy as the check sees it: a request count, a resident size, and the collections run. */
function proxyUnderWatch() {
  const clock = new FakeClock();
  const log = new FakeLog();
  const state = { served: 0, rss: 60 * MB, releases: 0, rssAfterRelease: 60 * MB };
  const watch = startMemoryRelease({
    clock,
    log,
    served: () => state.served,
    rss: () => state.rss,
    release: () => {
      state.releases += 1;
      state.rss = state.rssAfterRelease;
    },
    checkIntervalMs: 10_000,
    thresholdBytes: 8 * MB,
  });
  return { clock, log, state, watch };
}

describe('memory release after a burst', () => {
  it('compacts once after start-up, then not again while the proxy stays idle', async () => {
    const { clock, state, watch } = proxyUnderWatch();
    await clock.advance(10_000);
    expect(state.releases).toBe(1);
    await clock.advance(10 * 60_000);
    expect(state.releases).toBe(1);
    watch.stop();
  });

  it('compacts once when a burst that grew the memory is followed by a quiet interval', async () => {
    const { clock, log, state, watch } = proxyUnderWatch();
    await clock.advance(10_000);
    state.served = 90_000;
    state.rss = 130 * MB;
    state.rssAfterRelease = 80 * MB;
    await clock.advance(10_000);
    expect(state.releases).toBe(1);
    await clock.advance(10_000);
    expect(state.releases).toBe(2);
    expect(log.at('debug').at(-1)).toMatchObject({ msg: 'memory released after a burst', obj: { rssBeforeMb: 130, rssAfterMb: 80 } });
    await clock.advance(60_000);
    expect(state.releases).toBe(2);
    watch.stop();
  });

  it('never compacts under steady traffic, however much the memory grows', async () => {
    const { clock, state, watch } = proxyUnderWatch();
    await clock.advance(10_000);
    for (let i = 0; i < 60; i++) {
      state.served += 1000;
      state.rss += 2 * MB;
      await clock.advance(10_000);
    }
    expect(state.releases).toBe(1);
    watch.stop();
  });

  it('leaves a burst alone that did not grow the memory past the threshold', async () => {
    const { clock, state, watch } = proxyUnderWatch();
    await clock.advance(10_000);
    state.served += 50;
    state.rss += 3 * MB;
    await clock.advance(20_000);
    expect(state.releases).toBe(1);
    watch.stop();
  });

  it('measures the next burst from what the last compaction left, so memory it cannot free is not chased', async () => {
    const { clock, state, watch } = proxyUnderWatch();
    await clock.advance(10_000);
    state.served += 1;
    state.rss = 100 * MB;
    state.rssAfterRelease = 95 * MB;
    await clock.advance(20_000);
    expect(state.releases).toBe(2);
    state.served += 1;
    state.rss = 100 * MB;
    await clock.advance(20_000);
    expect(state.releases).toBe(2);
    watch.stop();
  });

  it('stops checking once stopped', async () => {
    const { clock, state, watch } = proxyUnderWatch();
    watch.stop();
    await clock.advance(60_000);
    expect(state.releases).toBe(0);
  });
});
