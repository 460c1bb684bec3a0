import type { IncomingMessage } from 'node:http';

/**
 * What the request path asks of the process's memory (docs/performance.md, "Memory under large
 * bodies"), as an interface the proxy owns: the wiring hands it a read budget, so the request path
 * knows nothing of collectors.
 */

/** Where the request path reports the body bytes it reads into the process. */
export interface ReadBudget {
  /** `bytes` of a body were read: a chunk of the gateway's answer, or of a caller's upload. */
  spend(bytes: number): void;
}

/** A budget that is never spent: for tests that need none. */
export const NO_BUDGET: ReadBudget = { spend: () => {} };

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
