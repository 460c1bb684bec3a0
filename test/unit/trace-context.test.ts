import { describe, expect, it } from 'vitest';
import { IdSource } from '../../src/telemetry/tracing/ids.js';
import { createSampler } from '../../src/telemetry/tracing/sampler.js';
import { parseTraceparent, putTraceparent, readCallerTrace, removeCallerTrace } from '../../src/telemetry/tracing/trace-context.js';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const SPAN = '00f067aa0ba902b7';

describe("a caller's traceparent (W3C Trace Context)", () => {
  it('reads a valid one, sampled or not, and a later version with more fields', () => {
    expect(parseTraceparent(`00-${TRACE}-${SPAN}-01`)).toEqual({ traceId: TRACE, spanId: SPAN, sampled: true });
    expect(parseTraceparent(`00-${TRACE}-${SPAN}-00`)).toEqual({ traceId: TRACE, spanId: SPAN, sampled: false });
    expect(parseTraceparent(`01-${TRACE}-${SPAN}-03-later`)).toEqual({ traceId: TRACE, spanId: SPAN, sampled: true });
  });

  it.each([
    ['upper-case hex', `00-${TRACE.toUpperCase()}-${SPAN}-01`],
    ['a trace id of zeros', `00-${'0'.repeat(32)}-${SPAN}-01`],
    ['a parent id of zeros', `00-${TRACE}-${'0'.repeat(16)}-01`],
    ['version ff', `ff-${TRACE}-${SPAN}-01`],
    ['version 00 with more fields', `00-${TRACE}-${SPAN}-01-more`],
    ['a short trace id', `00-${TRACE.slice(1)}-${SPAN}-01`],
    ['two values in one field', `00-${TRACE}-${SPAN}-01, 00-${TRACE}-${SPAN}-01`],
  ])('refuses %s', (_what, value) => {
    expect(parseTraceparent(value)).toBeUndefined();
  });

  it('is read from the raw headers: none, one with its tracestate, several (no valid parent, and no tracestate)', () => {
    expect(readCallerTrace(['Host', 'h', 'Accept', '*/*'])).toBeUndefined();
    const one = readCallerTrace(['TraceParent', `00-${TRACE}-${SPAN}-01`, 'tracestate', 'a=1', 'TraceState', 'b=2']);
    expect(one).toEqual({ parent: { traceId: TRACE, spanId: SPAN, sampled: true }, traceState: 'a=1,b=2' });
    const two = readCallerTrace(['traceparent', `00-${TRACE}-${SPAN}-01`, 'traceparent', `00-${TRACE}-${SPAN}-01`, 'tracestate', 'a=1']);
    expect(two).toEqual({ parent: undefined, traceState: '' });
    // A tracestate longer than what a vendor must pass on stays off the spans (the header goes on as sent).
    expect(readCallerTrace(['traceparent', `00-${TRACE}-${SPAN}-01`, 'tracestate', `a=${'x'.repeat(600)}`])?.traceState).toBe('');
  });
});

describe("the proxy's traceparent in a header list", () => {
  it("removes every caller traceparent, and its tracestate when asked, keeping the rest in order and the proxy's Authorization last", () => {
    const headers = ['traceparent', 'a', 'Accept', '*/*', 'TRACEPARENT', 'b', 'tracestate', 's', 'authorization', 'Bearer t'];
    const kept = [...headers];
    removeCallerTrace(kept, false);
    expect(kept).toEqual(['Accept', '*/*', 'tracestate', 's', 'authorization', 'Bearer t']);
    removeCallerTrace(headers, true);
    expect(headers).toEqual(['Accept', '*/*', 'authorization', 'Bearer t']);
  });

  it('puts it first, then replaces it where it is at each later attempt, even when the list moved', () => {
    const headers = ['Accept', '*/*', 'authorization', 'Bearer t'];
    const at = putTraceparent(headers, 'one', -1);
    expect(headers).toEqual(['traceparent', 'one', 'Accept', '*/*', 'authorization', 'Bearer t']);
    expect(putTraceparent(headers, 'two', at)).toBe(0);
    headers.unshift('x-moved', '1');
    expect(putTraceparent(headers, 'three', at)).toBe(2);
    expect(headers.filter((h) => h === 'traceparent')).toHaveLength(1);
    expect(headers[3]).toBe('three');
  });
});

describe('the samplers', () => {
  const low = Buffer.from('00000000000000000000000000000001', 'hex');
  const high = Buffer.from('ffffffff00000000000000000000000e', 'hex');
  const parent = (sampled: boolean) => ({ traceId: low.toString('hex'), spanId: SPAN, sampled });

  it("keep a trace by its id's words under the ratio, as OpenTelemetry's SDK does, whatever the parent for traceidratio", () => {
    const ratio = createSampler('traceidratio', 0.5);
    expect(ratio(undefined, low, 0)).toBe(true);
    expect(ratio(undefined, high, 0)).toBe(false);
    expect(ratio(parent(true), high, 0)).toBe(false);
    // The id is read where it is in its block.
    expect(ratio(undefined, Buffer.concat([high, low]), 16)).toBe(true);
    expect(createSampler('traceidratio', 1)(undefined, high, 0)).toBe(true);
    expect(createSampler('traceidratio', 0)(undefined, low, 0)).toBe(false);
  });

  it("follow the caller's sampled flag when parent-based, the root sampler without a parent", () => {
    const sample = createSampler('parentbased_traceidratio', 0);
    expect(sample(parent(true), low, 0)).toBe(true);
    expect(sample(parent(false), low, 0)).toBe(false);
    expect(sample(undefined, low, 0)).toBe(false);
    expect(createSampler('parentbased_always_on', 0)(undefined, high, 0)).toBe(true);
    expect(createSampler('parentbased_always_off', 1)(parent(true), high, 0)).toBe(true);
    expect(createSampler('always_off', 1)(parent(true), low, 0)).toBe(false);
  });
});

describe('the ids', () => {
  it('have no 8-byte group all zero, even from a source of zeros', () => {
    const ids = new IdSource((buf) => buf.fill(0));
    const at = ids.take(32);
    for (let i = at; i < at + 32; i += 8) expect(ids.block.subarray(i, i + 8).some((b) => b !== 0)).toBe(true);
  });

  it('are cut from a block filled anew when spent, each cut apart from the others', () => {
    let fills = 0;
    const ids = new IdSource((buf) => {
      fills += 1;
      buf.fill(fills);
    });
    const first = ids.take(32);
    const block = ids.block;
    const cuts = [first];
    while (ids.block === block) cuts.push(ids.take(32));
    expect(fills).toBe(2);
    expect(new Set(cuts.slice(0, -1)).size).toBe(cuts.length - 1);
    expect(cuts.at(-1)).toBe(0);
    expect(ids.block[0]).toBe(2);
  });
});
