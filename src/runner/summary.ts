import type { ItemProblem, ItemRow, ItemState, Store } from '../store/index.js';
import type { Stop } from './core/control.js';
import type { KeyRoster } from './keys/roster.js';

/** What a run did; the CLI decides the exit code from it. */
export interface RunSummary {
  counts: Record<ItemState, number>;
  credits: { charged: number; refunded: number };
  stop?: Stop;
  /** Items whose content changed after they were submitted: kept, not resubmitted. */
  changed: string[];
  failures: Record<string, number>;
  /** Of the skipped, those a person's decision skipped (a rejected gate): no failure, and no retry puts them back. */
  skippedByDecision: number;
  /** The items behind `failures`, in manifest order (the first 20). */
  problems: ItemProblem[];
  /** Items the state has that the manifest no longer has: not run, not counted. */
  removed: number;
  /** With --only: the items not selected that are still to be sent, held back (`counts` are the selected ones'). */
  notSelected?: number;
  /** With --only: what the items held back would cost, as far as prices are known (`unpriced` of them have none). */
  notSelectedCredits?: { credits: number; unpriced: number };
  /** Items whose attempt was sent with a key this run lacks (by fingerprint): they wait for a run with it. */
  keysMissing: Record<string, number>;
  /** Keys the service refused during the run (by fingerprint), and how many items wait for each. */
  keysRefused: Record<string, { code: string; message: string; waiting: number }>;
  /** Outputs going to a bucket: how many are published, and how many wait (saved in `staging`) for the same command. */
  publication?: {
    location: string;
    staging: string;
    /** Outputs and web copies in the bucket, and waiting in `staging`; of them, the copies. */
    published: number;
    waiting: number;
    failed: number;
    copiesPublished: number;
    copiesWaiting: number;
  };
  /** Web copies the manifest asks of the current image outputs that are not made yet: the same command makes them. */
  copies: { missing: number };
  /** Items not sent because an input's current version was rejected in review: each waits for that input's next version. */
  onRejectedInputs?: { id: string; input: string }[];
  /** Items waiting for a decision on their gates: how many, what they would cost (`unpriced` have no price), and the gates. */
  decisions?: { items: number; credits: number; unpriced: number; gates: string[] };
}

/** The run's summary from the state, as it ended. */
export function summarize(
  store: Store,
  stopped: Stop | undefined,
  roster: KeyRoster,
  facts: {
    only: boolean;
    changed: string[];
    publishing?: { location: string; staging: string } | undefined;
    /** An item's price, where one is known. */
    priceOf: (item: ItemRow) => number | undefined;
  },
): RunSummary {
  // With --only, the run is judged by what it was asked to do.
  const all = store.itemReports.counts();
  const counts = store.queue.selectedCounts() ?? all;
  // A drain says, at its end, what it left unsent.
  const notSent = counts.pending + counts.queued;
  const stop =
    stopped?.kind === 'drained'
      ? {
          ...stopped,
          message: `drained: the jobs in flight were finished and downloaded; ${notSent} item${notSent === 1 ? ' was' : 's were'} not sent${notSent ? ' (run the same command to send them)' : ''}`,
        }
      : stopped;
  return {
    counts,
    ...(facts.only ? heldBack(store, facts.priceOf) : {}),
    credits: store.attempts.totals(),
    ...(stop ? { stop } : {}),
    changed: facts.changed,
    failures: store.itemReports.failuresByCode(),
    skippedByDecision: Math.min(counts.skipped, store.itemReports.skippedByDecision().length),
    problems: store.itemReports.problems().slice(0, 20),
    removed: store.itemReports.removed(),
    ...roster.summary(),
    ...(facts.publishing ? { publication: { ...facts.publishing, ...publicationCounts(store) } } : {}),
    copies: { missing: store.webCopies.missing() },
    ...waitingForDecisions(store, facts.priceOf),
    ...onRejectedInputs(store),
  };
}

/** The items left waiting for a decision, priced: the run's end says how many, what they would spend and who decides. */
function waitingForDecisions(
  store: Store,
  priceOf: (item: ItemRow) => number | undefined,
): Pick<RunSummary, 'decisions'> {
  const waiting = store.gates.waitingItems();
  if (waiting.length === 0) return {};
  const { credits, unpriced } = priced(waiting, priceOf);
  return {
    decisions: { items: waiting.length, credits, unpriced, gates: store.gates.waitedOn().map((g) => g.id) },
  };
}

/** Items a rejected output is an input of: never sent with it; they wait for its next version. */
function onRejectedInputs(store: Store): Pick<RunSummary, 'onRejectedInputs'> {
  const selected = store.queue.selectedIds();
  const waiting = store.queue.waitingOnRejected().filter((w) => !selected || selected.has(w.id));
  return waiting.length ? { onRejectedInputs: waiting } : {};
}

/** What these items would cost, as far as prices are known. */
function priced(items: readonly ItemRow[], priceOf: (item: ItemRow) => number | undefined) {
  let credits = 0;
  let unpriced = 0;
  for (const item of items) {
    const price = priceOf(item);
    if (price === undefined) unpriced++;
    else credits += price;
  }
  return { credits, unpriced };
}

function publicationCounts(store: Store): Omit<NonNullable<RunSummary['publication']>, 'location' | 'staging'> {
  const { published, waiting, failed, copiesPublished, copiesWaiting } = store.publications.counts();
  return { published, waiting, failed, copiesPublished, copiesWaiting };
}

/** With --only: the items left out that are still to be sent (done or ended ones are not held back), and their price. */
function heldBack(
  store: Store,
  priceOf: (item: ItemRow) => number | undefined,
): Pick<RunSummary, 'notSelected' | 'notSelectedCredits'> {
  const unsent = store.queue.unselectedUnsent();
  return { notSelected: unsent.length, notSelectedCredits: priced(unsent, priceOf) };
}
