/**
 * Shared fast-check parameters for the property tests: a fixed seed, so a failure reproduces on
 * every run, and a time budget, so the suite stays fast on a busy machine.
 */
import type { Parameters } from 'fast-check';

/** Seed for every property; change it locally to explore, never commit a random one. */
export const SEED = 20261123;

/** At most this many runs and this many milliseconds per property, whichever ends first. */
export const FC: Parameters<unknown> = { seed: SEED, numRuns: 3000, interruptAfterTimeLimit: 3000, markInterruptAsFailure: false };
