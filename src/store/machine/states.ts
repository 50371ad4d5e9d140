/**
 * An item's states, and their groups, defined once: the machine's moves
 * (./moves.ts), the store's SQL and the runner read them from here.
 * `queued`: its attempt (key and body) is committed and waits for a
 * submission token, never sent; `submitting`: sent (or to be resent after a
 * backoff) and not yet answered with a job; `maybe_accepted`: no answer said
 * whether the attempt made a job, and this run's resends ran out: a later run
 * resends the same key and body, nothing ever replaces it. `waiting`: a gated
 * item whose gates are not all made and approved: it holds nothing and is not
 * sent.
 */
export const ITEM_STATES = [
  'pending',
  'waiting',
  'queued',
  'submitting',
  'maybe_accepted',
  'running',
  'downloading',
  'done',
  'failed',
  'rejected',
  'blocked',
  'skipped',
] as const;
export type ItemState = (typeof ITEM_STATES)[number];

/** Work remains, and a run takes it up on its own. */
export const OPEN_STATES = [
  'pending',
  'queued',
  'submitting',
  'maybe_accepted',
  'running',
  'downloading',
] as const satisfies readonly ItemState[];
/** Waiting on a person: a decision on a gate moves it, nothing else does. */
export const WAITING_STATES = ['waiting'] as const satisfies readonly ItemState[];
/** Nothing more happens on its own: only a person's command (`retry`, a redo), or its output found gone, moves it. */
export const FINAL_STATES = ['done', 'failed', 'rejected', 'blocked'] as const satisfies readonly ItemState[];
/** Ended for now, and moved again on its own when what ended it is undone (an input made again, a rejection cleared). */
export const REVIVABLE_STATES = ['skipped'] as const satisfies readonly ItemState[];
/** Nothing is left for a run to do: final, or revivable. */
export const ENDED_STATES = [...FINAL_STATES, ...REVIVABLE_STATES] as const;
/** Sent, and no answer has named a job yet: each may still come back blocked, or be a job already. */
export const UNANSWERED_STATES = ['submitting', 'maybe_accepted'] as const satisfies readonly ItemState[];
/** Ended without an output: dependents cannot run; `retry` looks here. */
export const ENDED_WITHOUT_OUTPUT = [
  'failed',
  'rejected',
  'blocked',
  'skipped',
] as const satisfies readonly ItemState[];

/** A SQL list literal of states, for `state IN (…)`: the values are the constants above, never input. */
export function sqlStates(states: readonly ItemState[]): string {
  return `(${states.map((s) => `'${s}'`).join(', ')})`;
}
