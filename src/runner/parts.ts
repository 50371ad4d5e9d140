import type { Store } from '../store/index.js';
import { recordShapePrices } from '../store/shape-prices.js';
import { SnapshotKeeper } from '../sink/index.js';
import type { Control, Stop } from './core/control.js';
import { PauseSwitch } from './core/pause-switch.js';
import { RunSession } from './core/session.js';
import { ModerationBreaker } from './feed/breaker.js';
import { runCanary } from './feed/canary.js';
import { Feeder } from './feed/feeder.js';
import { FeedLoops } from './feed/loops.js';
import { holdsNew, idle, moreMayCome } from './feed/rules.js';
import { Credits } from './keys/credits.js';
import type { KeyLanes } from './keys/lanes.js';
import { KeyRoster } from './keys/roster.js';
import { JobLife, laterStagesOf, type LaterStages } from './life.js';
import { preflight } from './preflight.js';
import type { RunInputs } from './shared.js';
import { wiringOf, type Wiring } from './wiring.js';
import { summarize, type RunSummary } from './summary.js';
import { FirstSync } from './sync/first-sync.js';
import { recover } from './sync/recovery.js';
import { downloadTaskDeps, jobTaskDeps, type RunActs } from './task-deps.js';
import { startUpkeep } from './upkeep.js';
import { DownloadHealth } from './watch/download-health.js';
import { OutputsLease } from './watch/lease.js';
import { type KnownWaits, QuietWatch } from './watch/quiet.js';
import { TimedWaits } from './watch/timed-waits.js';

export type { RunInputs } from './shared.js';

/** What a builder takes of the run's inputs: only what it names. */
type Given<K extends keyof RunInputs> = Pick<RunInputs, K>;

/**
 * What the runner's sequence holds of the parts: each stage it calls, and
 * the run's own steps, already given what they use.
 */
export interface RunParts {
  readonly store: Store;
  readonly control: Control;
  readonly lanes: KeyLanes;
  readonly firstSync: FirstSync;
  /** Each job's life, stage by stage. */
  readonly life: JobLife;
  /** Keeps every key's slots full with ready items. */
  readonly feed: FeedLoops;
  /** The upkeep and the watchdog, begun with the run (ended by the run's close stack): ready once the upkeep is. */
  open(): Promise<void>;
  /** The checks before anything is paid for, the output place claimed; then the snapshots and the later stages begin. Why the run should stop, when a check does not hold. */
  preflight(): Promise<Stop | undefined>;
  /** A killed run's items go on where they were. */
  recover(): Promise<void>;
  /** The canary, when asked for (see runCanary). */
  canary(drain: () => Promise<void>): ReturnType<typeof runCanary>;
  summary(changed: string[]): RunSummary;
}

/** Builds each part once, in order, each given only what it uses; none is changed after. */
export function buildParts(inputs: RunInputs): RunParts {
  const { store, options, outputs, tuning, logger, closing } = inputs;
  const { clock } = options;
  const wired = wiringOf(inputs);
  const { control, lanes } = wired;
  const paced = pacingOf(inputs, wired);
  const { life, later, timedWaits } = lifeOf(inputs, wired, paced);
  closing.defer(() => life.close());
  const lease = new OutputsLease(outputs, control, clock.now, logger, tuning?.leaseMs, leftLease(inputs));
  closing.defer(() => lease.release());
  const { redoChanged, simulate, canary, only } = options;
  const firstSync = new FirstSync(
    store,
    inputs.manifest,
    { redoChanged, simulate, canary, only, now: clock.now, outDir: outputs.location, syncStepMs: tuning?.syncStepMs },
    control,
    inputs.toSync,
  );
  const { feeder, pauseSwitch, breaker, credits, roster } = paced;
  const { downloads, reachability } = wired;
  const feed = new FeedLoops({
    feeder,
    breaker,
    credits,
    roster,
    store,
    clock,
    control,
    lanes,
    // The feed's rules (feed/rules.ts), each handed what it reads.
    holdsNew: () => holdsNew({ reachability, pause: pauseSwitch, publisher: later.publisher }),
    moreMayCome: (type) =>
      moreMayCome(
        {
          firstSync,
          waitForDecisions: options.waitForDecisions,
          waiting: (t) => store.itemReports.workByType()[t].waiting,
        },
        type,
      ),
    idle: () => idle({ firstSync, verifying: life.verifying, lanesIdle: () => lanes.idle(), downloads, feeder }),
    startJob: (item, lane, price) => life.begin(item, lane, price, true),
  });
  const quiet = quietOf(inputs, wired, paced, { life, firstSync, timedWaits });
  const keeper = keeperOf(inputs, lease);
  // The state's last snapshot before the place is let go (closed before the lease): the next holder restores it all.
  if (keeper) closing.defer(() => keeper.end());
  return {
    store,
    control,
    lanes,
    firstSync,
    life,
    feed,
    open: () => openUpkeep(inputs, wired, paced, quiet),
    ...stepsOf(inputs, wired, paced, { life, firstSync, lease, keeper }),
  };
}

/** What decides what is sent, on which key, and when. */
interface Pacing {
  readonly feeder: Feeder;
  readonly session: RunSession;
  readonly credits: Credits;
  readonly breaker: ModerationBreaker;
  readonly roster: KeyRoster;
  readonly pauseSwitch: PauseSwitch;
}

function pacingOf(
  inputs: Given<'store' | 'options' | 'manifest' | 'catalog' | 'budget'>,
  { control, lanes }: Pick<Wiring, 'control' | 'lanes'>,
): Pacing {
  const { store } = inputs;
  const { clock, maxBlocked } = inputs.options;
  const feeder = new Feeder(store, clock, control);
  const session = new RunSession();
  return {
    feeder,
    session,
    credits: creditsOf(inputs, control, lanes, session),
    breaker: new ModerationBreaker(store, clock, control, maxBlocked),
    roster: new KeyRoster(lanes, store, (id) => feeder.holds(id), control, clock.now),
    pauseSwitch: new PauseSwitch(),
  };
}

/** Each job's life, its stages given their deps, and the run's acts they report to. */
function lifeOf(
  inputs: Given<'store' | 'options' | 'outputs' | 'manifest' | 'logger' | 'statePath'>,
  wired: Pick<Wiring, 'control' | 'reachability' | 'lanes' | 'downloads'>,
  paced: Pick<Pacing, 'feeder' | 'breaker' | 'roster' | 'credits' | 'pauseSwitch' | 'session'>,
): { life: JobLife; later: LaterStages; timedWaits: TimedWaits } {
  const { store, logger } = inputs;
  const { clock } = inputs.options;
  const { control, reachability, lanes, downloads } = wired;
  const { feeder, breaker, roster, credits } = paced;
  const timedWaits = new TimedWaits();
  const downloadHealth = new DownloadHealth();
  const acts: RunActs = {
    accepted: (itemId) => {
      feeder.answered(itemId);
      breaker.answered();
    },
    timed: (wait) => timedWaits.timed(wait),
    downloadEnded: (failure) => downloadHealth.ended(failure, control),
    refused: (lane, error, reaction) => roster.answerRefusal(lane, error, reaction),
  };
  const base = { ...inputs, clock, control, reachability, lanes };
  const later = laterStagesOf(inputs, control, clock.now);
  const life = new JobLife({
    job: jobTaskDeps({ ...base, pauseSwitch: paced.pauseSwitch, credits, session: paced.session }, acts),
    download: downloadTaskDeps(base, acts),
    later,
    store,
    control,
    feeder,
    credits,
    roster,
    lanes,
    downloads,
    said: { now: clock.now, logger },
  });
  return { life, later, timedWaits };
}

/** What the watchdog asks when the run goes quiet: each known wait, and what is held. */
function quietOf(
  inputs: Given<'store' | 'options' | 'logger'>,
  {
    control,
    reachability,
    downloads,
    coordinator,
  }: Pick<Wiring, 'control' | 'reachability' | 'downloads' | 'coordinator'>,
  { credits, pauseSwitch, breaker, feeder }: Pick<Pacing, 'credits' | 'pauseSwitch' | 'breaker' | 'feeder'>,
  { life, firstSync, timedWaits }: { life: JobLife; firstSync: FirstSync; timedWaits: TimedWaits },
): QuietWatch {
  const { options } = inputs;
  const known: KnownWaits = {
    capUntil: () => credits.waitingUntil,
    coordinatorDown: () => coordinator.down,
    paused: () => pauseSwitch.isPaused,
    waitingForBreaker: () => breaker.waitingForAnswer,
    syncing: () => firstSync.syncing,
    timedWaits: () => timedWaits.count + downloads.pending,
    laterStages: () => life.laterStagesBusy,
    stalledDownloads: () => {
      const stalled = downloads.stalled();
      return stalled && { ...stalled, idleTimeoutMs: options.idleTimeoutMs };
    },
  };
  return new QuietWatch(inputs.store, feeder, reachability, control, known, options.clock.now, inputs.logger);
}

/** What holds the run's place and state: the lease on the output place, and the snapshots beside a bucket's outputs. */
interface Holding {
  readonly life: JobLife;
  readonly lease: OutputsLease;
  readonly keeper: SnapshotKeeper | undefined;
}

/** The upkeep and the watchdog, begun with the run; the run's close stack ends the upkeep (the watchdog's stop is there). */
function openUpkeep(
  inputs: Given<'store' | 'logger' | 'outputs' | 'options' | 'closing'>,
  wired: Pick<Wiring, 'control' | 'lanes' | 'reachability' | 'downloads' | 'watchdog'>,
  paced: Pick<Pacing, 'credits' | 'session' | 'pauseSwitch' | 'breaker'>,
  quiet: QuietWatch,
): Promise<void> {
  const { store, logger, outputs, options, closing } = inputs;
  const { control, lanes, reachability, downloads, watchdog } = wired;
  const { credits, session, pauseSwitch, breaker } = paced;
  const upkeep = startUpkeep({
    store,
    clock: options.clock,
    control,
    logger,
    session,
    lanes,
    outputs,
    idleTimeoutMs: options.idleTimeoutMs,
    waits: { credits, reachability, downloads },
    pauseSwitch,
    breaker,
  });
  closing.defer(() => upkeep.stop());
  watchdog.start(quiet);
  return upkeep.ready;
}

/** The run's own steps, each given what it uses: the checks before paying, recovery, the canary, the summary. */
function stepsOf(
  inputs: Given<'store' | 'options' | 'outputs' | 'logger' | 'manifest'>,
  { control, lanes }: Pick<Wiring, 'control' | 'lanes'>,
  { feeder, credits, roster }: Pick<Pacing, 'feeder' | 'credits' | 'roster'>,
  { life, firstSync, lease, keeper }: Holding & { firstSync: FirstSync },
): Pick<RunParts, 'preflight' | 'recover' | 'canary' | 'summary'> {
  const { store, options, outputs, logger } = inputs;
  return {
    preflight: async () => {
      const stop = await preflight({ ...inputs, firstSync, lease });
      if (stop) return stop;
      // What the items that wait for a decision would cost, for status to say without the catalog.
      recordShapePrices(
        store,
        store.itemSync.shapes().flatMap((shape) => {
          const price = credits.priceOfShape(shape);
          return price === undefined ? [] : [{ ...shape, credits: price }];
        }),
      );
      keeper?.start();
      life.startAfterDownloads();
      return undefined;
    },
    recover: async () => {
      const { verifying } = await recover({
        store,
        lanes,
        roster,
        outputs,
        now: options.clock.now,
        logger,
        signal: control.abort.signal,
        startJob: (item, lane) => life.begin(item, lane, credits.priceOf(item), false),
        startDownload: (item, jobId) => life.downloadOutputs(item, jobId),
      });
      life.verify(verifying);
    },
    canary: (drain) =>
      options.canary ? runCanary(store, control, feeder, options.canary, drain) : Promise.resolve('passed'),
    summary: (changed) => {
      const { publishing } = outputs;
      return summarize(store, control.stopReason, roster, {
        only: options.only !== undefined,
        changed,
        publishing: publishing && { location: publishing.location, staging: publishing.staging },
        priceOf: (item) => credits.priceOf(item),
      });
    },
  };
}
/** Where a released lease is recorded in the state, for the next run to take up. */
function leftLease({ store }: Given<'store'>): ConstructorParameters<typeof OutputsLease>[5] {
  return {
    get: () => store.meta('lease_left'),
    set: (holder) => (holder ? store.setMeta('lease_left', JSON.stringify(holder)) : store.deleteMeta('lease_left')),
  };
}

/** A rehearsal starts over each time: only a real run's state is kept beside its outputs. */
function keeperOf(
  inputs: Given<'outputs' | 'options' | 'store' | 'logger' | 'tuning'>,
  lease: Pick<OutputsLease, 'holds'>,
): SnapshotKeeper | undefined {
  const { snapshots } = inputs.outputs;
  if (!snapshots || inputs.options.simulate) return undefined;
  const { store, logger } = inputs;
  return new SnapshotKeeper(snapshots, () => store, {
    everyMs: inputs.tuning?.snapshotEveryMs,
    // Only the place's holder writes its snapshots: a refused run, or one taken over, never names its state there.
    allowed: () => lease.holds,
    said: (what) =>
      'taken' in what
        ? logger?.info({ snapshot: what.taken.key, bytes: what.taken.bytes, ms: what.taken.ms }, 'state snapshot taken')
        : logger?.warn({ error: what.failed }, 'state snapshot not taken'),
  });
}

function creditsOf(
  inputs: Given<'store' | 'manifest' | 'catalog' | 'options' | 'budget'>,
  control: Control,
  lanes: Pick<KeyLanes, 'active'>,
  session: Pick<RunSession, 'id'>,
): Credits {
  const { store, manifest, catalog } = inputs;
  const { clock } = inputs.options;
  return new Credits(
    store,
    clock,
    control,
    {
      budget: inputs.budget,
      catalog,
      prices: manifest.manifest.prices,
      perTag: manifest.manifest.budget?.perTag,
    },
    () => lanes.active.map((l) => l.cap),
    (until) => {
      // The run waits for the daily cap, every key alike: status says until when.
      if (until !== undefined) store.runs.beat(session.id, clock.now(), { waitingUntil: until });
    },
  );
}
