/**
 * What `approve` and `reject` do, without printing: a decision on each
 * item's current version, as review records it, written beside any run (no
 * lock: a running run sends what it unlocked within a second or two).
 */
import { userInfo } from 'node:os';
import { locate } from '../manifest/load-valid.js';
import { Store, type DecisionEffect, type DecisionEntry, type ReviewDecision } from '../store/index.js';
import { existingStatePathFor } from '../store/state-path.js';
import { idList } from '../util/words.js';
import { EXIT, ExitError, usageError } from '../util/exit-error.js';
import { openingState, refuseForeignState, writeReportFiles, type StateChoice } from './state.js';
import { openStateReadOnly } from '../store/state-path.js';

/**
 * One decision recorded, and what it moved: the items it sends now, those it skipped (a rejected gate), those it
 * took back before they were sent, and those sent before it (never undone), with their credits.
 */
export type Decision = Omit<DecisionEffect, 'itemId' | 'decision'> & {
  id: string;
  decision: ReviewDecision;
  by: string;
  /** The chain behind it as it stood before the decision: what it may spend with the approvals after this one. */
  upTo: { items: number; credits: number };
};

/** What `approve` or `reject` recorded, and what still waits for a decision after it. */
export interface Decided {
  state: string;
  decisions: Decision[];
  /** Gates named by --waiting whose current version is not made yet: nothing to decide on. */
  notMade: string[];
  waiting: number;
  /** The results files written again with the decisions in them, or why they could not be (`report` writes them). */
  results: { jsonl: string; csv: string } | { problem: string };
}

/** What a decision is asked for: the items (or, to approve, every gate an item waits on), and a note kept with each. */
export interface DecideChoice extends StateChoice {
  ids: readonly string[];
  waiting?: boolean | undefined;
  note?: string | undefined;
  /** Who decides: else GENBATCH_DECIDER, else the OS user. */
  by?: string | undefined;
}

/** Who a decision is recorded as taken by: the name given, else GENBATCH_DECIDER, else the OS user. */
export function deciderOf(by: string | undefined, env: NodeJS.ProcessEnv): string {
  const named = by?.trim() || env.GENBATCH_DECIDER?.trim();
  if (named) return named;
  try {
    return userInfo().username || 'unknown';
  } catch {
    return 'unknown';
  }
}

/**
 * Records `decision` on each item's current version. An unknown id, or an
 * item whose current version is not made and verified, is refused (exit 2,
 * naming each) and nothing is written.
 */
export async function decideItems(
  path: string,
  decision: ReviewDecision,
  choice: DecideChoice,
  cwd: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<Decided> {
  if (choice.ids.length === 0 && !choice.waiting)
    throw usageError(
      decision === 'approved' ? 'name the items to approve, or give --waiting' : 'name the items to reject',
    );
  const manifest = await locate(path, cwd);
  const statePath = existingStatePathFor(manifest, choice, cwd);
  const store = openingState(() => Store.openForReview(statePath));
  let decided: Omit<Decided, 'results'>;
  try {
    refuseForeignState(store, manifest, choice, statePath);
    const now = Date.now();
    const by = deciderOf(choice.by, env);
    // Asked and recorded in one transaction: a refusal leaves nothing of the batch recorded.
    const { decisions, notMade } = store.tx(() => {
      const { chosen, notMade } = chosenItems(store, choice, statePath);
      // What each chain may spend with the approvals after this one, read before the decisions move anything.
      const chains = store.reviewQueries.unlocksOf(chosen.map((c) => c.id));
      const entries = store.decisions.decideAll(
        chosen.map(({ id, version }) => ({ itemId: id, version, decision, note: choice.note, by, now })),
      );
      const decisions = chosen.map(({ id }, i): Decision => {
        const upTo = chains.get(id)?.upTo ?? { items: 0, credits: 0 };
        const entry = entries[i]!;
        if ('refused' in entry)
          throw usageError(`${id} cannot be decided now (${entry.refused}). Nothing was recorded.`);
        const { itemId: _item, decision: _decision, note: _note, at: _at, byTimeout: _timeout, ...effect } = entry;
        return { id, decision, ...effect, upTo };
      });
      return { decisions, notMade };
    });
    decided = { state: statePath, decisions, notMade, waiting: store.gates.waitingItems().length };
  } catch (error) {
    throw unwritable(error, statePath);
  } finally {
    store.close();
  }
  return { ...decided, results: await resultsAgain(path, choice, cwd, env) };
}

/** A state that takes no write (read-only, locked past the wait, a full disk) is the environment's: exit 4, one line. */
function unwritable(error: unknown, statePath: string): unknown {
  const code = (error as { code?: unknown }).code;
  if (typeof code !== 'string' || !code.startsWith('SQLITE_')) return error;
  return new ExitError(
    EXIT.environment,
    `cannot record a decision in ${statePath}: ${(error as Error).message} (${code}). Nothing was recorded; fix it and decide again.`,
    undefined,
    { cause: error },
  );
}

/** The results files carry a decision at once: written again from the state (no network). */
async function resultsAgain(
  path: string,
  choice: StateChoice,
  cwd: string,
  env: NodeJS.ProcessEnv,
): Promise<Decided['results']> {
  try {
    const written = await writeReportFiles(
      path,
      { state: choice.state, simulate: choice.simulate, html: true },
      cwd,
      env,
    );
    return { jsonl: written.jsonl, csv: written.csv };
  } catch (error) {
    return { problem: (error as Error).message };
  }
}

/**
 * An id as asked: `ID`, the item's current version, or `ID@N`, version N (what a person saw, in the gallery or
 * the results): a version since superseded is refused, naming the current one. An item whose id itself ends in
 * `@N` is that item.
 */
function askedVersion(store: Store, asked: string): { id: string; version?: number } {
  if (store.items.get(asked)) return { id: asked };
  const at = /^(.+)@([1-9][0-9]*)$/.exec(asked);
  return at && store.items.get(at[1]!) ? { id: at[1]!, version: Number(at[2]) } : { id: asked };
}

/** The items named (or the gates waited on), each with its current version; refused whole when one cannot be decided. */
function chosenItems(
  store: Store,
  choice: DecideChoice,
  statePath: string,
): { chosen: { id: string; version: number }[]; notMade: string[] } {
  const notMade: string[] = [];
  const asked = new Set(choice.ids);
  if (choice.waiting)
    for (const gate of store.gates.waitedOn()) {
      if (gate.state === 'done' && gate.review === 'unreviewed') asked.add(gate.id);
      else if (gate.state !== 'done') notMade.push(gate.id);
    }
  const unknown: string[] = [];
  const unmade: string[] = [];
  const superseded: string[] = [];
  const chosen: { id: string; version: number }[] = [];
  for (const one of asked) {
    const { id, version } = askedVersion(store, one);
    const item = store.items.get(id);
    const current = item && store.reviews.current(id);
    if (!item) unknown.push(id);
    else if (current && version !== undefined && version < current.version)
      superseded.push(`${one} (the current version is ${id}@${current.version})`);
    else if (
      item.state !== 'done' ||
      !current ||
      current.verified < current.outputs ||
      (version !== undefined && version > current.version)
    )
      unmade.push(`${one} (${item.state})`);
    else chosen.push({ id, version: current.version });
  }
  const problems = [
    unknown.length ? `no item has the id ${idList(unknown)} in ${statePath}` : '',
    superseded.length
      ? `a decision is recorded only on an item's current version, and these were made again since: ${firstOf(superseded)}`
      : '',
    unmade.length
      ? `not made yet, so there is nothing to decide on: ${firstOf(unmade)} (its outputs are decided once they are all verified)`
      : '',
  ].filter(Boolean);
  if (problems.length) throw usageError(`${problems.join('; ')}. Nothing was recorded.`);
  return { chosen, notMade };
}

/** The first 20 of a list, and how many more. */
const firstOf = (list: readonly string[]) =>
  `${list.slice(0, 20).join(', ')}${list.length > 20 ? ` and ${list.length - 20} more` : ''}`;

/** The decision record of a manifest's state, newest first: who decided what, when, and what it moved. */
export async function decisionRecord(
  path: string,
  choice: StateChoice,
  cwd: string,
): Promise<{ state: string; decisions: DecisionEntry[] }> {
  const manifest = await locate(path, cwd);
  const statePath = existingStatePathFor(manifest, choice, cwd);
  const store = openStateReadOnly(statePath);
  try {
    return { state: statePath, decisions: store.decisions.list() };
  } finally {
    store.close();
  }
}
