import type { DpopAlg } from '../../config/config.js';
import type { Clock } from '../../core/clock.js';
import type { Log } from '../../core/log.js';
import { watchFile } from '../../core/watched-file.js';
import { loadDpopKey, type DpopKey } from './dpop-key.js';
import type { DpopProver } from './proof.js';

export interface DpopKeyWatchOptions {
  /** `DPOP_KEY_FILE`. */
  path: string;
  /** The file's text as read at start (see `DpopStartup.keyText`). */
  initialText: string;
  /** `DPOP_ALG`, when set: a new key that cannot sign it is refused and the current key kept. */
  alg: DpopAlg | undefined;
  prover: DpopProver;
  /** Called after the key was replaced: the token source fetches a token bound to the new key at once. */
  onRotate?: (key: DpopKey) => void;
  /** Called for every new problem with the file (unreadable, not a usable key). */
  onError?: (reason: string) => void;
  clock: Clock;
  log: Log;
  read?: (path: string) => Promise<string>;
}

/**
 * Watches `DPOP_KEY_FILE` and makes each new usable key the prover's current key, in one step:
 * token requests from then on are bound to the new key, while a token already held keeps being
 * proven with the key it was bound to until it is replaced. A file that cannot be read or holds
 * no usable key is logged (never its content) and the current key stays. Returns the stop function.
 */
export function watchDpopKeyFile(options: DpopKeyWatchOptions): () => void {
  const { prover, onRotate, alg } = options;
  return watchFile<DpopKey>({
    path: options.path,
    what: 'DPOP_KEY_FILE',
    initialText: options.initialText,
    parse: (text) => loadDpopKey(text, alg),
    onChange: (key) => {
      if (!prover.replaceKey(key)) return false;
      options.log.info({ thumbprint: key.thumbprint, alg: key.alg }, 'DPoP key replaced');
      onRotate?.(key);
      return true;
    },
    ...(options.onError !== undefined ? { onError: options.onError } : {}),
    clock: options.clock,
    log: options.log,
    ...(options.read !== undefined ? { read: options.read } : {}),
  });
}
