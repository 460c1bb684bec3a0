import type { IncomingMessage } from 'node:http';

/**
 * What the request path asks of the process's memory (docs/performance.md, "Memory under large
 * bodies"; docs/operations.md, "When memory runs short"), as two small interfaces the proxy owns:
 * the wiring hands it a read budget and a shedding guard, so the request path knows nothing of
 * collectors, cgroups or samplers.
 */

/** Where the request path reports the body bytes it reads into the process. */
export interface ReadBudget {
  /** `bytes` of a body were read: a chunk of the gateway's answer, or of a caller's upload. */
  spend(bytes: number): void;
}

/** Whether the process is near its memory limit: asked once for each new request. */
export interface LoadShedding {
  /** True while new requests are answered `503 overloaded`; a field read, set by a sampler. */
  readonly shedding: boolean;
}

/** A budget that is never spent and a process never shed: for tests and tools that need neither. */
export const NO_BUDGET: ReadBudget = { spend: () => {} };
export const NEVER_SHED: LoadShedding = { shedding: false };

const kBudget = Symbol('budget');
/** A caller's request, pointing at the budget its body is read against: the listener below is built once. */
type Metered = IncomingMessage & { [kBudget]?: ReadBudget };

function onUploadChunk(this: Metered, chunk: Buffer): void {
  this[kBudget]!.spend(chunk.length);
}

/**
 * Reports each chunk of a caller's upload to `budget` as it is read. Called before the body is
 * handed to undici, which resumes it: the stream is left paused, so every chunk reaches both.
 */
export function meterUpload(req: IncomingMessage, budget: ReadBudget): void {
  (req as Metered)[kBudget] = budget;
  req.on('data', onUploadChunk).pause();
}
