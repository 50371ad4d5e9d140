import type { Catalog } from '../api/catalog.js';
import type { ManifestTop } from '../manifest/index.js';
import { Transfers } from '../scheduler/transfers.js';
import type { Store } from '../store/index.js';
import { ModerationBreaker } from './feed/breaker.js';
import { RunClock } from './core/clock.js';
import { Control } from './core/control.js';
import { logEvents } from './core/events.js';
import { coordinatorNotices } from './keys/coordination.js';
import { Credits } from './keys/credits.js';
import { Feeder } from './feed/feeder.js';
import { FirstSync, type ToSync } from './sync/first-sync.js';
import { KeyRoster } from './keys/roster.js';
import { KeyLane, KeyLanes, type LaneKey } from './keys/lanes.js';
import type { RunOptions } from './options.js';
import { PauseGate } from './core/pause-gate.js';
import type { Reachability } from './watch/reachability.js';
import { watchService } from './watch/service-watch.js';

/** The parts of a run, each the one owner of its concern, built once and never changed after. */
export interface RunParts {
  readonly store: Store;
  readonly clock: RunClock;
  readonly control: Control;
  readonly lanes: KeyLanes;
  readonly credits: Credits;
  readonly feeder: Feeder;
  readonly breaker: ModerationBreaker;
  readonly roster: KeyRoster;
  readonly reachability: Reachability;
  readonly pauseGate: PauseGate;
  readonly downloads: Transfers;
  readonly firstSync: FirstSync;
  /** Whether the coordinator's database answers: submissions wait for it while it does not (a known wait). */
  readonly coordinator: { down: boolean };
  /** The run's listeners leave the keys' clients (which may outlive it): called once the run ends. */
  detach(): void;
}

/** What the parts tell the run as it goes. */
export interface PartsHooks {
  /** Something was sent, answered or said: the watchdog's quiet starts again. */
  activity(): void;
  /** The run's id in the state (for the heartbeat a cap wait writes). */
  runId(): number;
}

export interface RunInputs {
  keys: readonly LaneKey[];
  store: Store;
  manifest: ManifestTop;
  opts: RunOptions;
  catalog: Catalog | undefined;
  toSync?: ToSync | undefined;
}

export function buildParts(inputs: RunInputs, hooks: PartsHooks): RunParts {
  const { keys, store, opts } = inputs;
  const clock = new RunClock(opts.now, opts.timeScale);
  // Every poll, upload and download in flight listens for the interrupt: one per slot and download, plus the queues'.
  const listeners =
    keys.reduce((n, k) => n + k.limits.imagesInFlight + k.limits.videosInFlight, 0) + opts.downloadConcurrency + 64;
  const control = new Control(opts.logger, listeners);
  // Anything said is activity: the watchdog's quiet starts again.
  const hearing = [control.events.on(() => hooks.activity())];
  if (opts.logger) hearing.push(control.events.on(logEvents(opts.logger)));
  const coordinator = { down: false };
  const noticed = coordinatorNotices(control);
  const coordinatorSaid = (reachable: boolean, message: string) => {
    coordinator.down = !reachable;
    noticed(reachable, message);
  };
  const lanes = new KeyLanes(
    keys.map((k) => new KeyLane(k, store, clock, control.noNewWork.signal, listeners, coordinatorSaid)),
  );
  const feeder = new Feeder(store, clock, control);
  const downloads = downloadTransfers(opts, control);
  wakeOnTaskEnds(lanes, downloads, control);
  for (const lane of lanes.all) hearing.push(forwardAnswers(lane, control));
  hearing.push(giveUpOnTheWireAfterStop(lanes, control));
  const service = watchService({
    lanes,
    clock,
    control,
    now: opts.now,
    unreachableMs: opts.unreachableMs,
    logger: opts.logger,
    onActivity: () => hooks.activity(),
  });
  hearing.push(service.stopHearing);
  return {
    detach: () => {
      for (const stop of hearing) stop();
      lanes.stop();
    },
    store,
    clock,
    control,
    lanes,
    credits: creditsOf(inputs, clock, control, lanes, hooks),
    feeder,
    breaker: new ModerationBreaker(store, clock, control, opts.maxBlocked),
    roster: new KeyRoster(lanes, store, (id) => feeder.holds(id), control, opts.now),
    reachability: service.reachability,
    pauseGate: new PauseGate(),
    downloads,
    firstSync: new FirstSync(store, inputs.manifest, opts, control, inputs.toSync),
    coordinator,
  };
}

function creditsOf(inputs: RunInputs, clock: RunClock, control: Control, lanes: KeyLanes, hooks: PartsHooks): Credits {
  const { store, opts, manifest, catalog } = inputs;
  return new Credits(
    store,
    clock,
    control,
    {
      maxCredits: opts.maxCredits,
      catalog,
      prices: manifest.manifest.prices,
      perTag: manifest.manifest.budget?.perTag,
    },
    () => lanes.active.map((l) => l.cap),
    (until) => {
      // The run waits for the daily cap, every key alike: status says until when.
      if (until !== undefined) store.runs.beat(hooks.runId(), opts.now(), { waitingUntil: until });
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
function downloadTransfers(opts: RunOptions, control: Control): Transfers {
  const quietMs = Math.min(1_000, opts.idleTimeoutMs / 4);
  return new Transfers(
    opts.downloadConcurrency,
    quietMs,
    opts.now,
    (itemId, since) => control.emit({ kind: 'transfer-stalled', itemId, transfer: 'download', since }),
    (itemId, since, how) =>
      control.emit({
        kind: 'transfer-stall-ended',
        itemId,
        transfer: 'download',
        since,
        stalledMs: opts.now() - since,
        how,
      }),
  );
}
