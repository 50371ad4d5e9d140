/**
 * What a program shows of a run from its state, as the command line does:
 * the live line's figures while it runs. The state is read here, so a
 * caller never reaches into it.
 */
import { liveEta } from '../report/status.js';
import { OPEN_STATES, type ItemState, type Store } from '../store/index.js';

export type { ItemState } from '../store/index.js';

/** A run's figures as they stand, each read from its state when asked. */
export interface LiveView {
  /** Items by state. */
  counts(): Record<ItemState, number>;
  /** Resends waiting for their time (they hold no slot). */
  deferredResends(): number;
  credits(): { charged: number; refunded: number };
  /** Seconds left, as `status` gives them, while the run is under way. */
  etaSeconds(now: number): number | undefined;
  /** Open items by the key their attempt was sent with (by fingerprint). */
  openByKey(): Map<string, number>;
  /** Outputs and web copies saved and not yet in the bucket. */
  unpublished(): number;
}

export function liveView(store: Store): LiveView {
  return {
    counts: () => store.itemReports.counts(),
    deferredResends: () => store.itemReports.deferredResends(),
    credits: () => store.attempts.totals(),
    etaSeconds: (now) => liveEta(store, now)?.seconds,
    openByKey: () => new Map(store.itemReports.openByKey().map((r) => [r.key_fp, r.n])),
    unpublished: () => store.publications.counts().waiting,
  };
}

/** How many items are still open (not ended) among these counts. */
export function openCount(counts: Record<ItemState, number>): number {
  return OPEN_STATES.reduce((n, state) => n + counts[state], 0);
}
