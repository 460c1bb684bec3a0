/**
 * The samplers `OTEL_TRACES_SAMPLER` names, as the OpenTelemetry specification defines them
 * ("Built-in samplers"), for the proxy's spans: a decision per trace the proxy starts or continues.
 * `traceidratio` decides from the trace id as OpenTelemetry's JavaScript SDK does, so a trace
 * another service of the same ratio kept is kept here too.
 */
import type { TracesSampler } from '../../config/tracing.js';

/** A caller's span, from a valid `traceparent`: ids in lower-case hex. */
export interface RemoteParent {
  readonly traceId: string;
  readonly spanId: string;
  /** Its trace flags' sampled bit. */
  readonly sampled: boolean;
}

/**
 * Whether a trace is sampled, under `parent` when the caller sent a valid one; the trace id is the
 * 16 bytes at `at` in `ids`.
 */
export type Sample = (parent: RemoteParent | undefined, ids: Uint8Array, at: number) => boolean;

/** The XOR of a trace id's four 32-bit words (big-endian), as the SDK's TraceIdRatioBasedSampler reads it. */
function accumulate(ids: Uint8Array, at: number): number {
  let accumulation = 0;
  for (let i = at; i < at + 16; i += 4)
    accumulation = (accumulation ^ ((ids[i]! << 24) | (ids[i + 1]! << 16) | (ids[i + 2]! << 8) | ids[i + 3]!)) >>> 0;
  return accumulation;
}

/** Creates the sampler named, with `ratio` for the ratio samplers. */
export function createSampler(name: TracesSampler, ratio: number): Sample {
  const upperBound = ratio >= 1 ? 2 ** 32 : Math.floor(Math.max(0, ratio) * 0xffffffff);
  const byRatio = (ids: Uint8Array, at: number): boolean => accumulate(ids, at) < upperBound;
  switch (name) {
    case 'always_on':
      return () => true;
    case 'always_off':
      return () => false;
    case 'traceidratio':
      return (_parent, ids, at) => byRatio(ids, at);
    case 'parentbased_always_on':
      return (parent) => parent?.sampled ?? true;
    case 'parentbased_always_off':
      return (parent) => parent?.sampled ?? false;
    case 'parentbased_traceidratio':
      return (parent, ids, at) => parent?.sampled ?? byRatio(ids, at);
  }
}
