import type { ReviewDecision, Store } from '../../src/store/index.js';

/** A person's decision on a version, through the one call every decider uses: true when it was recorded. */
export function decide(
  store: Store,
  itemId: string,
  version: number,
  decision: ReviewDecision | null,
  note: string | null | undefined,
  now: number,
): boolean {
  return !('refused' in store.decisions.decide({ itemId, version, decision, note, by: 'tester', now }));
}
