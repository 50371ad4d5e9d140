/**
 * What the state-only commands do (status, retry, report), without printing:
 * each finds the manifest's state as `run` keeps it, reads or changes it,
 * and gives back what a program (or the command line) shows. No network.
 */
import { locate } from '../manifest/load-valid.js';
import { resolveOutDir } from '../manifest/index.js';
import { DEFAULT_PATIENCE } from '../options/flags.js';
import { collectStatus, type Status } from '../report/status.js';
import { openOutputSink } from '../sink/index.js';
import { StateFileError, Store } from '../store/index.js';
import {
  existingStatePathFor,
  kindMeant,
  lookForState,
  openStateReadOnly,
  statePathFor,
  type StateFlags,
} from '../store/state-path.js';
import { idList } from '../util/words.js';
import { EXIT, ExitError } from '../util/exit-error.js';
import { IN_PROCESS, madeAgainst } from '../store/made-against.js';

/**
 * Which state a command looks at: the one `--state` names, a rehearsal's (`simulate`), else the one `run` takes in
 * the same environment: a trial's (`.simulated`) when `baseUrl`, the environment's service, is the simulator it ran
 * against (asked of the state, not the network).
 */
export type StateChoice = StateFlags;

/** A manifest's status; with no state yet, all zero, and where else a state is (a rehearsal's, a real run's). */
export async function stateStatus(
  path: string,
  choice: StateChoice,
  cwd: string,
): Promise<{ status: Status; found: boolean; elsewhere?: string | undefined }> {
  const manifest = await locate(path, cwd);
  const state = lookForState(manifest, choice, cwd);
  // A manifest that never ran has a status too: nothing yet (the same document, all zero, run.sessions 0).
  const store = state.found ? openStateReadOnly(state.path) : Store.empty();
  try {
    const status = collectStatus(store, { manifest: manifest.source.file, state: state.path }, Date.now());
    return { status, found: state.found, elsewhere: state.elsewhere };
  } finally {
    store.close();
  }
}

/** What `retry` put back. */
export type Retried =
  | { state: string; requeued: number; blocked: number; conflicts: string[]; nothingFailed?: true }
  | { state: string; rejected: string[] };

/**
 * Puts failed items back with new attempts (by code and id, if given);
 * blocked items are never resent unchanged. With `rejected`, the done items
 * whose current version was rejected in review go back for one new attempt each.
 */
export async function retryItems(
  path: string,
  choice: StateChoice & { code?: string[] | undefined; id?: string[] | undefined; rejected?: boolean | undefined },
  cwd: string,
): Promise<Retried> {
  const manifest = await locate(path, cwd);
  const statePath = existingStatePathFor(manifest, choice, cwd);
  const store = openingState(() => Store.open(statePath));
  try {
    if (choice.rejected) return { state: statePath, rejected: putBackRejected(store, choice) };
    const unknown = (choice.id ?? []).filter((id) => !store.items.get(id));
    if (unknown.length) throw new ExitError(EXIT.usage, `no item has the id ${idList(unknown)} in ${statePath}`);
    const codes = store.itemReports.failuresByCode();
    const unknownCodes = (choice.code ?? []).filter((c) => !(c in codes));
    const present = Object.keys(codes);
    // Nothing failed: nothing to put back, and nothing mistyped either.
    if (unknownCodes.length && present.length === 0)
      return { state: statePath, requeued: 0, blocked: 0, conflicts: [], nothingFailed: true };
    if (unknownCodes.length)
      throw new ExitError(
        EXIT.usage,
        `no item stopped with ${unknownCodes.join(', ')}; the codes there are: ${present.join(', ')} (genbatch status lists them)`,
      );
    const { requeued, conflicts } = store.items.putBack({ codes: choice.code, ids: choice.id, now: Date.now() });
    return { state: statePath, requeued, blocked: store.queue.inState('blocked').length, conflicts };
  } finally {
    store.close();
  }
}

function putBackRejected(store: Store, choice: { code?: string[] | undefined; id?: string[] | undefined }): string[] {
  if (choice.code?.length)
    throw new ExitError(EXIT.usage, '--rejected and --code choose different items: give one of them.');
  const rejected = store.reviews.rejectedCurrent();
  const chosen = choice.id?.length ? rejected.filter((id) => choice.id!.includes(id)) : rejected;
  return store.items.putBackRejected(chosen, Date.now());
}

/** The results files written from the state, and the items and credits per tag. */
export interface Reported {
  state: string;
  outDir: string;
  items: number;
  jsonl: string;
  csv: string;
  html: string | null;
  sidecars: number | null;
  tags: { tag: string; items: number; done: number; charged: number; refunded: number; net: number }[];
}

/** Writes results.jsonl and results.csv (and the gallery, sidecars) from the state file alone: no network. */
export async function writeReportFiles(
  path: string,
  choice: StateChoice & { out?: string | undefined; html?: boolean | undefined; sidecars?: boolean | undefined },
  cwd: string,
  env: NodeJS.ProcessEnv,
): Promise<Reported> {
  const manifest = await locate(path, cwd);
  const statePath = existingStatePathFor(manifest, choice, cwd);
  const store = openStateReadOnly(statePath);
  try {
    const outDir = choice.out
      ? resolveOutDir(cwd, choice.out)
      : (store.runs.all().at(-1)?.out_dir ?? manifest.outputDir);
    const { writeReport } = await import('../report/index.js');
    const outputs = await openOutputSink(outDir, { statePath, env, patience: DEFAULT_PATIENCE });
    const w = await writeReport(store, outputs, {
      title: manifest.name,
      html: choice.html ?? false,
      sidecars: choice.sidecars ?? false,
      now: Date.now(),
      budget: manifest.maxCredits ?? null,
    }).finally(() => outputs.close());
    const tags = store.itemReports.byTag().map((t) => ({ ...t, net: t.charged - t.refunded }));
    const files = { jsonl: w.jsonl, csv: w.csv, html: w.html ?? null, sidecars: w.sidecars ?? null };
    return { state: statePath, outDir, items: w.items, ...files, tags };
  } finally {
    store.close();
  }
}

/** Where a manifest's state is, and its outputs (the last run's place, else the manifest's): what review serves. */
export async function statePlace(
  path: string,
  choice: StateChoice,
  cwd: string,
): Promise<{ name: string; budget: number | null; statePath: string; outDir: string }> {
  const manifest = await locate(path, cwd);
  const statePath = existingStatePathFor(manifest, choice, cwd);
  const store = openStateReadOnly(statePath);
  try {
    const outDir = store.runs.all().at(-1)?.out_dir ?? manifest.outputDir;
    return { name: manifest.name, budget: manifest.maxCredits ?? null, statePath, outDir };
  } finally {
    store.close();
  }
}

/** Where a manifest's state is or will be (a scraper set up before the first run reads it as absent). */
export async function statePathOf(
  path: string,
  choice: StateChoice,
  cwd: string,
): Promise<{ name: string; statePath: string }> {
  const manifest = await locate(path, cwd);
  return {
    name: manifest.name,
    statePath: statePathFor(manifest, choice.state, cwd, kindMeant(manifest, choice, cwd)),
  };
}

/** A state opened to be written: one that cannot be (held, damaged, of another program) is the environment's, exit 4. */
export function openingState(open: () => Store): Store {
  try {
    return open();
  } catch (error) {
    throw new ExitError(EXIT.environment, (error as Error).message, undefined, { cause: error });
  }
}

/** Whether an error is the state file's own (damaged, unreadable, of another program): the environment's. */
export function isStateFileError(error: unknown): boolean {
  return error instanceof StateFileError;
}

/**
 * A state that a decision may not be written into, refused (exit 2, nothing recorded): one made from another
 * manifest, or of the other kind than asked (a rehearsal's named without --simulate, or --simulate naming a real
 * run's or a trial's).
 */
export function refuseForeignState(
  store: Store,
  manifest: { name: string },
  choice: StateChoice,
  statePath: string,
): void {
  const name = store.meta('manifest_name');
  if (name !== undefined && name !== manifest.name)
    throw new ExitError(
      EXIT.usage,
      `${statePath} is the state of the manifest named ${JSON.stringify(name)}, not of ${JSON.stringify(manifest.name)}: give that manifest, or this manifest's own state. Nothing was recorded.`,
    );
  const made = madeAgainst(store);
  const rehearsal = store.meta('rehearsal') === '1' || made?.service === IN_PROCESS;
  if (choice.simulate && !rehearsal)
    throw new ExitError(
      EXIT.usage,
      `${statePath} is ${made?.simulator ? "a trial's state (a run against a simulator)" : "a real run's state"}, and --simulate names a rehearsal's: leave out --simulate to decide on it. Nothing was recorded.`,
    );
  if (!choice.simulate && rehearsal)
    throw new ExitError(
      EXIT.usage,
      `${statePath} is a rehearsal's state: add --simulate to decide on it. Nothing was recorded.`,
    );
}
