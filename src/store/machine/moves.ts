import { ITEM_STATES, UNANSWERED_STATES, type ItemState } from './states.js';

/** One move of an item's life: the states it leaves and reaches, and what must hold for it. */
export interface Move {
  /** The machine's function that makes it (a method of `Lifecycle`, store/lifecycle.ts). */
  by: string;
  /** The states it may leave (none: the item is new). */
  from: readonly ItemState[];
  /** The states it may reach. */
  to: readonly ItemState[];
  /** What must hold, asked in the statement (or transaction) that moves the item. */
  guard: string;
  /** What it is, in a line. */
  what: string;
}

/** An attempt saved with its key (queued), sent and unanswered, or a job in flight: a redo never moves these. */
const IN_FLIGHT: readonly ItemState[] = ['queued', ...UNANSWERED_STATES, 'running'];
/** The states an item in the manifest may leave for `--redo-changed`: every other one. */
const REDO_FROM = ITEM_STATES.filter((state) => !IN_FLIGHT.includes(state));

/**
 * Every move of an item's life, by name: the machine's table. Lifecycle's
 * statements take their `from` lists from here, its moves accept only a `to`
 * listed here, docs/states.md is written from it, and a property test holds
 * the store to it.
 */
export const MOVES = {
  add: {
    by: 'add',
    from: [],
    to: ['pending'],
    guard: 'the id is new to the state',
    what: "a manifest's item enters the state (a gated one then settles on its gates)",
  },
  queue: {
    by: 'startAttempt',
    from: ['pending'],
    to: ['queued'],
    guard: "its attempt's key and exact body are saved in the same transaction",
    what: 'an attempt is made, ready to leave; nothing is sent yet',
  },
  send: {
    by: 'recordSent, recordSentAll',
    from: ['queued'],
    to: ['submitting'],
    guard:
      "every gate's current version is made and approved, asked in the transaction that marks it submitting; the attempt is bound to no other API key",
    what: 'the request is about to leave: from now on it may be accepted',
  },
  resend: {
    by: 'recordSent, recordSentAll',
    from: ['submitting', 'maybe_accepted'],
    to: ['submitting'],
    guard: "the attempt's own API key (what was sent is never undone, and never sent with another key)",
    what: 'the same key and body leave again',
  },
  defer: {
    by: 'deferResend',
    from: ['submitting'],
    to: ['submitting'],
    guard: 'the answer left its fate open (no answer, a 5xx, a 503, the key still in flight)',
    what: 'resent with the same key once its time comes',
  },
  hold: {
    by: 'recordMaybeAccepted, heldForKey',
    from: ['submitting'],
    to: ['maybe_accepted'],
    guard: "no answer named a job and this run's resends ran out (or its key is not this run's)",
    what: 'held for a later run to resend with the same key',
  },
  accept: {
    by: 'recordAccepted',
    from: ['submitting'],
    to: ['running'],
    guard: 'the service named the job; its charge is recorded in the same transaction',
    what: 'a job runs for the item',
  },
  refuse: {
    by: 'recordRefused',
    from: ['queued', 'submitting'],
    to: ['pending', 'failed', 'rejected', 'blocked'],
    guard: 'the service refused it: no job was made and no key spent',
    what: 'a new attempt later, or the end (a block recorded in the same transaction)',
  },
  conflict: {
    by: 'recordConflict',
    from: ['submitting'],
    to: ['failed'],
    guard: 'a 409 other than IN_FLIGHT: a job may exist under the key',
    what: 'ended, never replaced on its own',
  },
  download: {
    by: 'recordEnded',
    from: ['running'],
    to: ['downloading'],
    guard: "the job completed; its outputs are the item's from now on (others' superseded in the same transaction)",
    what: 'its outputs are fetched',
  },
  verify: {
    by: 'outputSaved, downloaded',
    from: ['downloading'],
    to: ['done'],
    guard: 'the last output is on disk and verified, recorded in the same transaction',
    what: 'made',
  },
  lose: {
    by: 'outputMissing',
    from: ['done', 'downloading'],
    to: ['downloading'],
    guard: 'an output is gone from disk, or changed',
    what: 'downloaded again, never resubmitted',
  },
  requeue: {
    by: 'requeue',
    from: ['pending', 'queued', 'submitting', 'maybe_accepted', 'running'],
    to: ['pending'],
    guard: 'nothing of it is on the wire: an attempt never sent, or a job that ended to be tried again',
    what: 'back to pending for a new attempt (or another key)',
  },
  postpone: {
    by: 'uploadFailed',
    from: ['pending', 'queued'],
    to: ['pending'],
    guard: 'an upload of its inputs failed (counted on the item)',
    what: 'tried again from its time on',
  },
  fail: {
    by: 'endWithoutOutput',
    from: ['pending', 'queued', 'submitting', 'maybe_accepted', 'running', 'downloading'],
    to: ['failed', 'rejected', 'blocked', 'skipped'],
    guard: 'open (a job failed or expired for the last time, an input refused, a block)',
    what: 'ended without an output',
  },
  crash: {
    by: 'crashed',
    from: ['pending'],
    to: ['failed'],
    guard: 'an error no policy foresaw, while nothing of it is on the wire (any other state keeps, noted)',
    what: 'ended, the error noted',
  },
  skip: {
    by: 'markSkipped, skipDoomed',
    from: ['pending', 'waiting'],
    to: ['skipped'],
    guard: 'a dependency ended without an output (or no price keeps a budget)',
    what: 'it can never run as the manifest stands',
  },
  wait: {
    by: 'settleGated',
    from: ['pending', 'skipped'],
    to: ['waiting'],
    guard:
      "one of its gates' current version is not made and approved (not made yet, made again, its decision cleared); a skipped one only if its gate's rejection skipped it",
    what: 'it waits for a decision, holding nothing',
  },
  takeBack: {
    by: 'settleGated',
    from: ['queued'],
    to: ['waiting', 'skipped'],
    guard: 'never sent, and a gate no longer approved (a rejection, a cleared decision, a gate made again)',
    what: 'a decision binds until the moment of sending',
  },
  skipByGate: {
    by: 'settleGated',
    from: ['pending', 'waiting'],
    to: ['skipped'],
    guard:
      "one of its gates' current version is rejected: in review, by a check, or by its approval timeout (which skips)",
    what: 'not sent; a rejection undone brings it back',
  },
  letGo: {
    by: 'settleGated',
    from: ['waiting', 'skipped'],
    to: ['pending'],
    guard:
      "every gate's current version is made and approved (an approval, or an approval timeout that approves); a skipped one only if a gate's rejection skipped it",
    what: 'it may be sent (a queued one stays queued)',
  },
  revive: {
    by: 'reviveSkipped',
    from: ['skipped'],
    to: ['pending'],
    guard: 'skipped for a dependency, and none of its dependencies has ended without an output now',
    what: 'an input it needs can be made again',
  },
  redoChanged: {
    by: 'redoChanged',
    from: REDO_FROM,
    to: ['pending'],
    guard: '`--redo-changed` and its content changed; never on the wire or in flight (those keep their state, flagged)',
    what: 'made anew, with a new key',
  },
  redoRejected: {
    by: 'redoRejected',
    from: ['done'],
    to: ['pending'],
    guard: '`--redo-rejected` or `retry --rejected`, while its current version is rejected in review',
    what: 'made anew, with a new key; the rejected outputs stay as an earlier version',
  },
  retry: {
    by: 'putBack',
    from: ['failed', 'skipped', 'downloading'],
    to: ['pending', 'queued', 'maybe_accepted', 'downloading'],
    guard:
      '`retry`: an attempt with no job yet goes back queued if never sent, maybe accepted if sent (resent with its own key); a download to downloading',
    what: 'a person puts it back',
  },
} as const satisfies Record<string, Move>;

export type MoveName = keyof typeof MOVES;
/** The states a move may reach. */
export type MoveTo<M extends MoveName> = (typeof MOVES)[M]['to'][number];

/** Every state change the table allows, as `from>to` (`>to` for a new item); a move that keeps the state is none. */
export const ALLOWED_CHANGES: ReadonlySet<string> = new Set(
  Object.values(MOVES as Record<string, Move>).flatMap((move) =>
    move.from.length === 0
      ? move.to.map((to) => `>${to}`)
      : move.from.flatMap((from) => move.to.filter((to) => to !== from).map((to) => `${from}>${to}`)),
  ),
);
