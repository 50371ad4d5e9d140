import { existsSync } from 'node:fs';
import type { PoolSetup } from '../api/pool-setup.js';
import { blockers, estimate as estimateItems, type Estimate } from '../estimate/index.js';
import { issueReport, loadValid } from '../manifest/load-valid.js';
import { checkAgainstService } from '../manifest/online.js';
import {
  dependenciesOf,
  gatesOf,
  IssueList,
  runBudget,
  type LoadedManifest,
  type ResolvedItem,
} from '../manifest/index.js';
import { selects } from '../runner/index.js';
import { RunClock } from '../scheduler/clock.js';
import { combinedLimits, DEFAULT_KEY_LIMITS, formatRate, type KeyLimits, type Rate } from '../scheduler/limits.js';
import { openStateReadOnly, statePathFor } from '../store/state-path.js';
import { EXIT, ExitError } from '../util/exit-error.js';
import { connect } from './connection.js';
import type { FlagValues } from '../options/flag.js';
import { ESTIMATE_FLAGS } from '../options/flags.js';
import { parseProgramFlags, type ProgramRunFlags } from '../options/resolve.js';
import { environmentFor, type Credentials } from './environment.js';
import { asRunError } from './outcome.js';

/** `genbatch estimate`'s flags in camelCase, as their parsers give them. */
export type EstimateFlags = FlagValues<typeof ESTIMATE_FLAGS>;

export type EstimateOptions = Pick<
  ProgramRunFlags,
  | 'state'
  | 'only'
  | 'submitRate'
  | 'readRate'
  | 'uploadRate'
  | 'maxImagesInFlight'
  | 'maxVideosInFlight'
  | 'dailyCap'
  | 'maxCredits'
  | 'redoRejected'
> &
  Credentials & {
    cwd?: string;
    /** Against the embedded simulator's catalog, balance and cap, not the service's. */
    simulate?: boolean;
  };

/** What `estimate()` finds: the document `genbatch estimate --json` prints, and whether the run can go as planned. */
export type EstimateResult = Record<string, unknown> &
  Estimate & {
    manifest: string;
    name: string;
    simulated: boolean;
    /** The scale the time is said at: 1 is real time; a simulator's own, or --time-scale's. */
    timeScale: number;
    blockers: ReturnType<typeof blockers>;
    /** 0 when the run can go as planned; 3 when the balance, the budget or the daily cap stop it (the CLI's exit code). */
    exitCode: number;
  };

/** A dry run, as `genbatch estimate --json` gives it: credits, time, key days, the plan; nothing is submitted. */
export async function estimate(manifest: string, options: EstimateOptions = {}): Promise<EstimateResult> {
  const { cwd, apiKey, env, ...program } = options;
  try {
    const flags = parseProgramFlags(program, ESTIMATE_FLAGS) as EstimateFlags;
    const parts = await estimateWith(manifest, flags, environmentFor({ apiKey, env }), cwd ?? process.cwd());
    return estimateDocument(parts);
  } catch (error) {
    throw asRunError(error);
  }
}

/** What an estimate is made of, for the document and for the command line's text. */
export interface EstimateFigures {
  loaded: LoadedManifest;
  result: Estimate;
  /** On a manifest that has run: what is not sent yet. */
  remaining: Estimate | undefined;
  /** With redoRejected: the items rejected in review. */
  redo: Estimate | undefined;
  spent: number;
  problems: ReturnType<typeof blockers>;
  pool: PoolSetup;
  limits: KeyLimits;
  /** The figures are a simulator's: a rehearsal's, or a service that says it is one. */
  simulated: boolean;
  /** The scale the time is said at (1: real time), and whose it is. */
  timeScale: number;
  timeScaleFrom: 'flag' | 'simulator' | 'none';
  exitCode: number;
}

/** What a state says of a manifest that has run: each item's state, and the credits charged net. */
interface RunSoFar {
  states: Map<string, string>;
  spent: number;
  /** Done items whose current version was rejected in review. */
  rejected: Set<string>;
  /** With --redo-changed: the items the state knows changed after they were submitted (an input made again, say). */
  changed: Set<string>;
}

function runSoFar(m: LoadedManifest, options: EstimateFlags, cwd: string, simulated: boolean): RunSoFar | undefined {
  // A rehearsal starts over each time: what an earlier one sent is not what the next one will (but --redo-rejected
  // goes on with its state, and --state names one).
  if (options.simulate && !options.state && !options.redoRejected) return undefined;
  // Against a simulator, the state of the runs made against it (kept apart from a real run's).
  const path = statePathFor(m, options.state, cwd, options.simulate ? 'rehearsal' : simulated ? 'trial' : 'real');
  if (!existsSync(path)) {
    if (options.redoRejected)
      throw new ExitError(
        EXIT.usage,
        `--redo-rejected: ${path} does not exist; nothing has run, so nothing was rejected.`,
      );
    return undefined;
  }
  const store = openStateReadOnly(path);
  try {
    const totals = store.attempts.totals();
    const rejected = new Set(options.redoRejected ? store.reviews.rejectedCurrent() : []);
    // As run --redo-changed makes them again: changed content is found by the run's sync; an input made again, here.
    const changed = new Set(options.redoChanged ? store.itemSync.changedIds() : []);
    return { states: store.itemSync.states(), spent: totals.charged - totals.refunded, rejected, changed };
  } finally {
    store.close();
  }
}

/**
 * What a run has yet to spend, from the state: what it has not sent, what is redone (rejected, changed, and what a
 * rejection skipped, back to wait for its gate's new version), split by what waits for a decision; and the redo's.
 */
function whatRemains(
  items: readonly ResolvedItem[],
  soFar: RunSoFar,
  redoRejected: boolean,
  of: (items: readonly ResolvedItem[], waiting?: ReadonlySet<string>) => Estimate,
): { remaining: Estimate; redo: Estimate | undefined } {
  const back = skippedBehind(items, soFar.rejected, soFar.states);
  const remaining = of(
    items.filter(
      (i) =>
        NOT_SENT.has(soFar.states.get(i.id) ?? 'pending') ||
        soFar.rejected.has(i.id) ||
        soFar.changed.has(i.id) ||
        back.has(i.id),
    ),
    // What waits for a decision now: an item whose gates were approved is spent now, not gated.
    new Set(items.filter((i) => soFar.states.get(i.id) === 'waiting' || back.has(i.id)).map((i) => i.id)),
  );
  const redo = redoRejected
    ? of(
        items.filter((i) => soFar.rejected.has(i.id) || back.has(i.id)),
        back,
      )
    : undefined;
  return { remaining, redo };
}

/**
 * The items a rejection skipped that a redo of `rejected` brings back to wait for the new version: skipped now, with
 * a gate among the rejected or among those brought back, however far down.
 */
function skippedBehind(
  items: readonly ResolvedItem[],
  rejected: ReadonlySet<string>,
  states: ReadonlyMap<string, string>,
): Set<string> {
  const back = new Set<string>();
  if (rejected.size === 0) return back;
  for (let grew = true; grew; ) {
    grew = false;
    for (const item of items) {
      if (back.has(item.id) || states.get(item.id) !== 'skipped') continue;
      if (gatesOf(item).some((g) => rejected.has(g) || back.has(g))) {
        back.add(item.id);
        grew = true;
      }
    }
  }
  return back;
}

/** Items a run has not sent yet: not in the state, pending, or queued (an attempt committed but never sent). */
const NOT_SENT = new Set(['pending', 'waiting', 'queued']);

/** The estimate for the library and the command line alike. */
export async function estimateWith(
  path: string,
  options: EstimateFlags,
  env: NodeJS.ProcessEnv,
  cwd: string,
): Promise<EstimateFigures> {
  const whole = await loadValid(path, cwd);
  // --only: the items it chooses and what they wait for, as run --only sends them.
  const loaded = options.only ? { ...whole, items: chosen(whole.items, options.only) } : whole;
  const { Catalog } = await import('../api/catalog.js');
  const connection = await connect(options, env, options.timeScale ?? 60);
  try {
    const { pool, timeScale, simulated } = await keysAndScale(connection, options);
    const soFar = runSoFar(loaded, options, cwd, simulated);
    if (pool.keys.length === 0)
      throw new ExitError(
        EXIT.stopped,
        `the service refused every key: ${pool.refused.map((r) => `${r.fingerprint} ${r.code}`).join(', ')}`,
      );
    // The balance is the account's, the same for each of its keys.
    const me = pool.accounts[0]!;
    const catalog = await Catalog.fetch(
      pool.keys[0]!.client,
      loaded.items.map((i) => i.type),
    );
    // The catalog the estimate prices from says a typo (an unknown model, a value it does not take) where it is, as
    // validate --online does: priced at 0, it would pass a CI step `validate && estimate`.
    const issues = new IssueList();
    checkAgainstService(loaded.items, loaded.source, catalog, pool.scopes, issues);
    if (issues.count > 0) throw new ExitError(EXIT.usage, issueReport(issues));
    const limits = combinedLimits(pool.keys.map((k) => k.limits));
    const keyCaps = pool.keys.map((k) => k.limits.dailyCap);
    const maxCredits = runBudget(options.maxCredits, loaded.manifest);
    const of = (items: readonly ResolvedItem[], waiting?: ReadonlySet<string>) =>
      estimateItems({
        waiting,
        items,
        catalog,
        prices: loaded.manifest.prices,
        limits,
        keyCaps,
        balance: me.credits,
        perTag: loaded.manifest.budget?.perTag,
        planKeys: planKeysOf(pool),
        ...(maxCredits !== undefined ? { maxCredits } : {}),
        ...(timeScale !== undefined ? { timeScale } : {}),
      });
    const result = of(loaded.items);
    const { remaining, redo } = soFar ? whatRemains(loaded.items, soFar, Boolean(options.redoRejected), of) : {};
    // What the rest of the run needs is judged, not what the whole manifest cost from the start.
    const spent = soFar?.spent ?? 0;
    const problems = blockers(remaining ?? result, spent);
    const exitCode = problems.length ? EXIT.stopped : EXIT.ok;
    const figures = { loaded, result, remaining, redo, spent, problems, pool, limits, simulated };
    return { ...figures, ...clockOf(options, timeScale), exitCode };
  } finally {
    await connection.close();
  }
}

/**
 * Each key's own limits and cap (its /me, in the service's time; several keys
 * run side by side), and the time scale the duration is said at: the plan is
 * in the service's time, said in real time at --time-scale, a rehearsal's, or
 * the one a time-scaled simulator says it runs at.
 */
async function keysAndScale(
  connection: Awaited<ReturnType<typeof connect>>,
  options: EstimateFlags,
): Promise<{ pool: PoolSetup; timeScale: number | undefined; simulated: boolean }> {
  const [{ setUpPool, rescaledPool, serviceTimeScale, saysSimulator }, { untilFirstAnswer }] = await Promise.all([
    import('../api/pool-setup.js'),
    import('../api/until-answered.js'),
  ]);
  const serviceTime = new RunClock(Date.now, 1);
  const pool = await untilFirstAnswer(() =>
    setUpPool(connection.keys, limitsOf(options, options.timeScale ?? 1), serviceTime),
  );
  const simulated = Boolean(options.simulate) || saysSimulator(pool.accounts[0]);
  if (options.timeScale !== undefined) return { pool, timeScale: options.timeScale, simulated };
  const timeScale = options.simulate ? 60 : serviceTimeScale(pool.accounts[0]);
  return timeScale === undefined
    ? { pool, timeScale, simulated }
    : { pool: rescaledPool(pool, limitsOf(options, timeScale), serviceTime), timeScale, simulated };
}

/** Each key as the day-by-day plan takes it: its cap, its pace, its slots, what it spent today. */
function planKeysOf(pool: PoolSetup) {
  return pool.keys.map((k, i) => ({
    key: k.fingerprint,
    cap: k.limits.dailyCap,
    submitEveryMs: k.limits.submit.windowMs / k.limits.submit.count,
    slots: { image: k.limits.maxImagesInFlight, video: k.limits.maxVideosInFlight },
    usedToday: pool.accounts[i]?.usedToday,
  }));
}

/** The scale the time is said at, and whose it is: --time-scale's, the simulator's, or none (real time). */
function clockOf(
  options: EstimateFlags,
  timeScale: number | undefined,
): Pick<EstimateFigures, 'timeScale' | 'timeScaleFrom'> {
  const timeScaleFrom = options.timeScale !== undefined ? 'flag' : timeScale !== undefined ? 'simulator' : 'none';
  return { timeScale: timeScale ?? 1, timeScaleFrom };
}

/** The items `only` chooses, and every item they wait for (however far back), in manifest order. */
function chosen(items: LoadedManifest['items'], only: readonly string[]): LoadedManifest['items'] {
  const pick = selects(only);
  const byId = new Map(items.map((i) => [i.id, i]));
  const wanted = new Set<string>();
  const want = (id: string): void => {
    if (wanted.has(id)) return;
    wanted.add(id);
    const item = byId.get(id);
    if (item) for (const dep of dependenciesOf(item)) want(dep.id);
  };
  for (const item of items) if (pick(item.id, item.tags ?? [])) want(item.id);
  return items.filter((i) => wanted.has(i.id));
}

/** The limits the settings give, over the spec's defaults, in the service's time (a rate given in real time is scaled back). */
function limitsOf(options: EstimateFlags, timeScale: number): KeyLimits {
  const inServiceTime = (rate: Rate): Rate => ({ count: rate.count, windowMs: rate.windowMs * timeScale });
  return {
    ...DEFAULT_KEY_LIMITS,
    ...(options.submitRate ? { submit: inServiceTime(options.submitRate) } : {}),
    ...(options.readRate ? { read: inServiceTime(options.readRate) } : {}),
    ...(options.uploadRate ? { upload: inServiceTime(options.uploadRate) } : {}),
    ...(options.maxImagesInFlight ? { maxImagesInFlight: options.maxImagesInFlight } : {}),
    ...(options.maxVideosInFlight ? { maxVideosInFlight: options.maxVideosInFlight } : {}),
    ...(options.dailyCap ? { dailyCap: options.dailyCap } : {}),
  };
}

/** What `estimate --json` prints, with the exit code the figures give. */
export function estimateDocument(parts: EstimateFigures): EstimateResult {
  const { loaded, result, remaining, spent, problems, pool, limits, simulated, timeScale, redo } = parts;
  const rest = remaining
    ? {
        remaining: {
          items: remaining.items,
          credits: remaining.credits,
          duration: remaining.duration,
          gated: remaining.gated,
          alreadyCharged: spent,
        },
      }
    : {};
  const keys = pool.keys.map((k) => ({
    fingerprint: k.fingerprint,
    submitRate: formatRate(k.limits.submit),
    imagesInFlight: k.limits.maxImagesInFlight,
    videosInFlight: k.limits.maxVideosInFlight,
    dailyCap: k.limits.dailyCap,
  }));
  return {
    manifest: loaded.source.file,
    name: loaded.name,
    simulated,
    timeScale,
    ...result,
    ...rest,
    blockers: problems,
    limits: {
      submitRate: formatRate(limits.submit),
      imagesInFlight: limits.maxImagesInFlight,
      videosInFlight: limits.maxVideosInFlight,
    },
    keys,
    refusedKeys: pool.refused,
    ...(redo ? { redoRejected: { items: redo.items.total, credits: redo.credits.total } } : {}),
    exitCode: parts.exitCode,
  };
}
