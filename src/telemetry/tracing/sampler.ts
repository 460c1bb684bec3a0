/**
 * The samplers `OTEL_TRACES_SAMPLER` names, as the OpenTelemetry specification defines them
 * ("Built-in samplers"), for the proxy's spans: a decision per trace the proxy starts or continues.
 * `traceidratio` decides from the trace id as OpenTelemetry's JavaScript SDK does, so a trace
 * another service of the same ratio kept is kept here too.
 */
import type { TracesSampler } from '../../config/tracing.js';

/** A caller's span, from a valid `traceparent`. */
export interface RemoteParent {
  readonly traceId: string;
  readonly spanId: string;
  /** Its trace flags' sampled bit. */
  readonly sampled: boolean;
}

/** Whether the trace `traceId` is sampled, under `parent` when the caller sent a valid one. */
export type Sample = (parent: RemoteParent | undefined, traceId: string) => boolean;

/**
 * The XOR of a trace id's four 32-bit words, as the SDK's TraceIdRatioBasedSampler reads it: read
 * digit by digit, without a string made per word (most requests are not sampled, and pay this).
 */
function accumulate(traceId: string): number {
  let accumulation = 0;
  for (let i = 0; i < 32; i += 8) {
    let word = 0;
    for (let j = i; j < i + 8; j++) {
      const c = traceId.charCodeAt(j);
      word = (word << 4) | (c < 58 ? c - 48 : c - 87);
    }
    accumulation = (accumulation ^ word) >>> 0;
  }
  return accumulation;
}

/** Creates the sampler named, with `ratio` for the ratio samplers. */
export function createSampler(name: TracesSampler, ratio: number): Sample {
  const upperBound = ratio >= 1 ? 2 ** 32 : Math.floor(Math.max(0, ratio) * 0xffffffff);
  const byRatio = (traceId: string): boolean => accumulate(traceId) < upperBound;
  switch (name) {
    case 'always_on':
      return () => true;
    case 'always_off':
      return () => false;
    case 'traceidratio':
      return (_parent, traceId) => byRatio(traceId);
    case 'parentbased_always_on':
      return (parent) => parent?.sampled ?? true;
    case 'parentbased_always_off':
      return (parent) => parent?.sampled ?? false;
    case 'parentbased_traceidratio':
      return (parent, traceId) => parent?.sampled ?? byRatio(traceId);
  }
}
