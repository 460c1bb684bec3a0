import { LRUCache } from 'lru-cache';
import type { Clock } from '../core/clock.js';
import { PASSTHROUGH_TOKEN_CONNECTIONS } from '../net/dispatchers.js';

/**
 * Credentials new to a route's pass-through cache whose first fetch may be in flight at once: as
 * many as the route's pass-through connections to the token endpoint (net/dispatchers.ts).
 */
export const NEW_CREDENTIALS_IN_FLIGHT = PASSTHROUGH_TOKEN_CONNECTIONS;

/** New credentials tried in any one second at most. */
export const NEW_CREDENTIALS_PER_SECOND = 10;

/** Of each bound, the places only a credential turned away before may take. */
export const RESERVED_FOR_RETRIES = 2;

/** Credentials turned away remembered (by their cache key), so that their retry finds a place. */
const TURNED_AWAY_REMEMBERED = 4096;

/**
 * Which credentials new to a route's pass-through cache may be tried now (docs/forwarding.md,
 * "Pass-through credentials under a flood"): at most {@link NEW_CREDENTIALS_IN_FLIGHT} in flight
 * and {@link NEW_CREDENTIALS_PER_SECOND} in any one second (a sliding window: no burst doubles
 * it). The last {@link RESERVED_FOR_RETRIES} places of each are kept for a credential turned away
 * before that comes back, as a caller retrying after its 503's `Retry-After` does: a flood that
 * sends each credential once never comes back, so it never takes them, and a new workspace
 * arriving among it is tried at its retry.
 */
export class NewCredentialAdmission {
  /** When each credential of the last second was let in, oldest first. */
  private readonly admittedAt: number[] = [];
  private readonly turnedAway = new LRUCache<string, true>({ max: TURNED_AWAY_REMEMBERED });

  constructor(private readonly clock: Clock) {}

  /**
   * Whether the credential of cache key `key` may be tried now, while `inFlight` new ones are
   * being tried: counted as tried when so, remembered as turned away when not.
   */
  admit(key: string, inFlight: number): boolean {
    const now = this.clock.now();
    const admitted = this.admittedAt;
    while (admitted.length > 0 && now - admitted[0]! >= 1000) admitted.shift();
    const reserve = this.turnedAway.has(key) ? 0 : RESERVED_FOR_RETRIES;
    if (admitted.length >= NEW_CREDENTIALS_PER_SECOND - reserve || inFlight >= NEW_CREDENTIALS_IN_FLIGHT - reserve) {
      this.turnedAway.set(key, true);
      return false;
    }
    this.turnedAway.delete(key);
    admitted.push(now);
    return true;
  }
}
