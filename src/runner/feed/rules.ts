import type { JobType } from '../keys/lanes.js';

/**
 * The feed's rules: when nothing new is sent, when more items may still
 * come, and when the run has nothing under way. The feed owns them; the run
 * hands each the parts it reads, as the little each needs to know.
 */

/** What may hold new submissions back. */
export interface Holds {
  readonly reachability: { readonly isDown: boolean };
  readonly pause: { readonly isPaused: boolean };
  /** The bucket's publisher, when outputs go to one: full while too many outputs wait for it. */
  readonly publisher?: { readonly full: boolean } | undefined;
}

/** Nothing new is sent now: nothing answers, another shell paused the run, or too many outputs wait for the bucket. */
export function holdsNew({ reachability, pause, publisher }: Holds): boolean {
  return reachability.isDown || pause.isPaused || (publisher?.full ?? false);
}

/** Where more items may come from though none is under way. */
export interface Sources {
  readonly firstSync: { readonly syncing: boolean };
  /** --wait-for-decisions: the run waits for items that wait for a decision. */
  readonly waitForDecisions: boolean;
  /** How many items of the type wait for a decision now. */
  waiting(type: JobType): number;
}

/** More items of the type may become ready: a first sync still writes items, or some wait for a decision the run waits for. */
export function moreMayCome({ firstSync, waitForDecisions, waiting }: Sources, type: JobType): boolean {
  return firstSync.syncing || (waitForDecisions && waiting(type) > 0);
}

/** What is under way in a run besides its feed. */
export interface UnderWay {
  readonly firstSync: { readonly syncing: boolean };
  /** Outputs found at the start being verified. */
  readonly verifying: boolean;
  /** Whether every key's slots are empty. */
  lanesIdle(): boolean;
  readonly downloads: { readonly size: number; readonly pending: number };
  readonly feeder: { readonly held: number };
}

/** Nothing of the run is under way: no sync, verification, task, download or held item. */
export function idle({ firstSync, verifying, lanesIdle, downloads, feeder }: UnderWay): boolean {
  return (
    !firstSync.syncing &&
    !verifying &&
    lanesIdle() &&
    downloads.size === 0 &&
    downloads.pending === 0 &&
    feeder.held === 0
  );
}
