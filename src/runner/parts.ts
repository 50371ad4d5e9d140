import { Transfers } from '../scheduler/transfers.js';
import { ModerationBreaker } from './feed/breaker.js';
import { Control } from './core/control.js';
import { logEvents } from './core/events.js';
import { coordinatorNotices } from './keys/coordination.js';
import { Credits } from './keys/credits.js';
import { Feeder } from './feed/feeder.js';
import { FirstSync } from './sync/first-sync.js';
import { KeyRoster } from './keys/roster.js';
import { KeyLane, KeyLanes } from './keys/lanes.js';
import type { ResolvedRunOptions } from '../options/resolve.js';
import type { RunClock } from '../scheduler/clock.js';
import { PauseGate } from './core/pause-gate.js';
import { RunSession } from './core/session.js';
import { FeedLoops } from './feed/loops.js';
import { JobLife } from './life.js';
import type { RunContext, RunInputs } from './shared.js';

export type { RunInputs } from './shared.js';
import { DownloadHealth } from './watch/download-health.js';
import { OutputsLease } from './watch/lease.js';
import { SnapshotKeeper } from '../sink/index.js';
import { type KnownWaits, QuietWatch } from './watch/quiet.js';
import { watchService } from './watch/service-watch.js';
import { TimedWaits } from './watch/timed-waits.js';
import { Watchdog } from './watch/watchdog.js';

/** Two minutes of the service's time (two seconds at the least) with nothing sent, answered or said: the watchdog looks. */
const QUIET_MS = 120_000;
const QUIET_FLOOR_MS = 2_000;

/** The parts of a run, each the one owner of its concern, built once, in this order, and never changed after. */
export interface RunParts extends RunContext {
  /** Each job's life, stage by stage. */
  readonly life: JobLife;
  /** Keeps every key's slots full with ready items. */
  readonly feed: FeedLoops;
  /** What the watchdog asks when the run goes quiet. */
  readonly quiet: QuietWatch;
}

export function buildParts(inputs: RunInputs): RunParts {
  const shared = contextOf(inputs);
  const { store, control, lanes, feeder, firstSync, downloads, reachability } = shared;
  const life = new JobLife(shared);
  const feed = new FeedLoops({
    ...shared,
    publisher: life.publisher,
    syncing: () => firstSync.syncing,
    idle: () =>
      !firstSync.syncing &&
      !life.verifying &&
      lanes.idle() &&
      downloads.size === 0 &&
      downloads.pending === 0 &&
      feeder.held === 0,
    startJob: (item, lane, price) => life.begin(item, lane, price, true),
  });
  const known: KnownWaits = {
    capUntil: () => shared.credits.waitingUntil,
    coordinatorDown: () => shared.coordinator.down,
    paused: () => shared.pauseGate.isPaused,
    waitingForBreaker: () => shared.breaker.waitingForAnswer,
    syncing: () => firstSync.syncing,
    timedWaits: () => shared.timedWaits.count + downloads.pending,
    laterStages: () => life.laterStagesBusy,
    stalledDownloads: () => {
      const stalled = downloads.stalled();
      return stalled && { ...stalled, idleTimeoutMs: inputs.options.idleTimeoutMs };
    },
  };
  const quiet = new QuietWatch(store, feeder, reachability, control, known, shared.clock.now, inputs.logger);
  return { ...shared, life, feed, quiet };
}

function contextOf(inputs: RunInputs): RunContext {
  const { keys, store, options, logger } = inputs;
  const { clock } = options;
  const watchdog = new Watchdog(clock.now, inputs.quietMs ?? Math.max(QUIET_FLOOR_MS, clock.scaled(QUIET_MS)));
  const session = new RunSession();
  // Every poll, upload and download in flight listens for the interrupt: one per slot and download, plus the queues'.
  const listeners =
    keys.reduce((n, k) => n + k.limits.maxImagesInFlight + k.limits.maxVideosInFlight, 0) +
    options.downloadConcurrency +
    64;
  const control = new Control(logger, listeners);
  // Anything said is activity: the watchdog's quiet starts again.
  const hearing = [control.events.on(() => watchdog.activity())];
  if (logger) hearing.push(control.events.on(logEvents(logger)));
  const { lanes, coordinator } = lanesOf(inputs, control, listeners);
  const feeder = new Feeder(store, clock, control);
  const downloads = downloadTransfers(options, control);
  wakeOnTaskEnds(lanes, downloads, control);
  for (const lane of lanes.all) hearing.push(forwardAnswers(lane, control));
  hearing.push(giveUpOnTheWireAfterStop(lanes, control));
  const service = watchService({
    lanes,
    clock,
    control,
    now: clock.now,
    unreachableMs: options.unreachableMs,
    logger,
    onActivity: () => watchdog.activity(),
  });
  hearing.push(service.stopHearing);
  const lease = new OutputsLease(inputs.outputs, control, clock.now, logger, inputs.leaseMs, {
    get: () => store.meta('lease_left'),
    set: (holder) => (holder ? store.setMeta('lease_left', JSON.stringify(holder)) : store.deleteMeta('lease_left')),
  });
  return {
    ...inputs,
    detach: () => {
      for (const stop of hearing) stop();
      lanes.stop();
    },
    clock,
    watchdog,
    session,
    control,
    lanes,
    credits: creditsOf(inputs, clock, control, lanes, session),
    feeder,
    breaker: new ModerationBreaker(store, clock, control, options.maxBlocked),
    roster: new KeyRoster(lanes, store, (id) => feeder.holds(id), control, clock.now),
    reachability: service.reachability,
    pauseGate: new PauseGate(),
    downloads,
    downloadHealth: new DownloadHealth(),
    lease,
    keeper: keeperOf(inputs, lease),
    timedWaits: new TimedWaits(),
    firstSync: new FirstSync(
      store,
      inputs.manifest,
      { ...options, now: clock.now, outLocation: inputs.outputs.location, syncStepMs: inputs.syncStepMs },
      control,
      inputs.toSync,
    ),
    coordinator,
  };
}

/** Each key's lane, and whether the coordinator its limits are shared through answers (a known wait while it does not). */
function lanesOf(
  inputs: RunInputs,
  control: Control,
  listeners: number,
): { lanes: KeyLanes; coordinator: { down: boolean } } {
  const { keys, store, options } = inputs;
  const coordinator = { down: false };
  const noticed = coordinatorNotices(control);
  const coordinatorSaid = (reachable: boolean, message: string) => {
    coordinator.down = !reachable;
    noticed(reachable, message);
  };
  const lanes = new KeyLanes(
    keys.map((k) => new KeyLane(k, store, options.clock, control.noNewWork.signal, listeners, coordinatorSaid)),
  );
  return { lanes, coordinator };
}

/** A rehearsal starts over each time: only a real run's state is kept beside its outputs. */
function keeperOf(inputs: RunInputs, lease: OutputsLease): SnapshotKeeper | undefined {
  const { snapshots } = inputs.outputs;
  if (!snapshots || inputs.options.simulate) return undefined;
  const { store, logger } = inputs;
  return new SnapshotKeeper(snapshots, () => store, {
    everyMs: inputs.snapshotEveryMs,
    // Only the place's holder writes its snapshots: a refused run, or one taken over, never names its state there.
    allowed: () => lease.holds,
    said: (what) =>
      'taken' in what
        ? logger?.info({ snapshot: what.taken.key, bytes: what.taken.bytes, ms: what.taken.ms }, 'state snapshot taken')
        : logger?.warn({ error: what.failed }, 'state snapshot not taken'),
  });
}

function creditsOf(
  inputs: RunInputs,
  clock: RunClock,
  control: Control,
  lanes: KeyLanes,
  session: RunSession,
): Credits {
  const { store, manifest, catalog } = inputs;
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

/** How long requests already on the wire may take to record their answer after an interrupt. */
const INTERRUPT_GRACE_MS = 1_000;

/**
 * An interrupt lets requests already on the wire record their answer, for a
 * second: then they are given up (a submission stays committed, resent with
 * its key by the next run), so the process exits within a second or two
 * even when the service swallows requests and answers none. A run that stops
 * because nothing answers gives them up at once: none will be answered.
 */
function giveUpOnTheWireAfterStop(lanes: KeyLanes, control: Control): () => void {
  let timer: NodeJS.Timeout | undefined;
  const giveUp = () => {
    for (const lane of lanes.all) lane.client.abandonSentBefore(Infinity);
  };
  const onAbort = () => {
    const kind = control.stopReason?.kind;
    if (kind === 'unreachable') giveUp();
    else if (kind === 'interrupted') {
      timer = setTimeout(giveUp, INTERRUPT_GRACE_MS);
      timer.unref();
    }
  };
  control.abort.signal.addEventListener('abort', onAbort, { once: true });
  return () => {
    clearTimeout(timer);
    control.abort.signal.removeEventListener('abort', onAbort);
  };
}

/** Each answer of the key's client as a run event, and each 429 as `rate-limited`. */
function forwardAnswers(lane: KeyLane, control: Control): () => void {
  const keyFp = lane.fingerprint;
  return lane.client.answers.on(({ method, path, limit, status, ms, code, retryAfterMs }) => {
    control.emit({ kind: 'answer', keyFp, method, path, limit, status, ms, ...(code ? { code } : {}) });
    if (status === 429)
      control.emit({
        kind: 'rate-limited',
        keyFp,
        limit,
        code: code ?? 'HTTP_429',
        ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
      });
  });
}

/**
 * A task's own last act cannot wake the feed loops: its queue still counts
 * it busy. Woken once the queue has let it go, the run ends at once. A
 * download frees no slot and never puts an item back: only the queue's end
 * (the run may be over) or an item with dependents wakes them.
 */
function wakeOnTaskEnds(lanes: KeyLanes, downloads: Transfers, control: Control): void {
  const wake = () => control.wake();
  for (const lane of lanes.all) {
    lane.slots.image.onTaskEnd(wake);
    lane.slots.video.onTaskEnd(wake);
  }
  downloads.onEachIdle(wake);
}

/** The downloads' places: one silent for a quarter of the idle timeout (a second at most) gives its place to the next one. */
function downloadTransfers(options: ResolvedRunOptions, control: Control): Transfers {
  const { now } = options.clock;
  const quietMs = Math.min(1_000, options.idleTimeoutMs / 4);
  return new Transfers(
    options.downloadConcurrency,
    quietMs,
    now,
    (itemId, since) => control.emit({ kind: 'transfer-stalled', itemId, transfer: 'download', since }),
    (itemId, since, how) =>
      control.emit({
        kind: 'transfer-stall-ended',
        itemId,
        transfer: 'download',
        since,
        stalledMs: now() - since,
        how,
      }),
  );
}
