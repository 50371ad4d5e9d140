import type { ResolvedRunOptions } from '../options/resolve.js';
import { Transfers } from '../scheduler/transfers.js';
import { Control } from './core/control.js';
import { logEvents } from './core/events.js';
import { coordinatorNotices } from './keys/coordination.js';
import { KeyLane, KeyLanes } from './keys/lanes.js';
import type { RunInputs } from './shared.js';
import type { Reachability } from './watch/reachability.js';
import { watchService } from './watch/service-watch.js';
import { Watchdog } from './watch/watchdog.js';

/** Two minutes of the service's time (two seconds at the least) with nothing sent, answered or said: the watchdog looks. */
const QUIET_MS = 120_000;
const QUIET_FLOOR_MS = 2_000;

/** How the run's parts hear each other and the service: its control, its keys, its downloads' places. */
export interface Wiring {
  readonly watchdog: Watchdog;
  readonly control: Control;
  readonly lanes: KeyLanes;
  /** Whether the coordinator's database answers: submissions wait for it while it does not (a known wait). */
  readonly coordinator: { readonly down: boolean };
  readonly downloads: Transfers;
  readonly reachability: Reachability;
}

export function wiringOf(
  inputs: Pick<RunInputs, 'keys' | 'store' | 'options' | 'logger' | 'tuning' | 'closing'>,
): Wiring {
  const { options, logger, tuning, closing } = inputs;
  const { clock } = options;
  const watchdog = new Watchdog(clock.now, tuning?.quietMs ?? Math.max(QUIET_FLOOR_MS, clock.scaled(QUIET_MS)));
  closing.defer(() => watchdog.stop());
  const { control, listeners } = controlOf(inputs, watchdog);
  const { lanes, coordinator } = lanesOf(inputs, control, listeners);
  closing.defer(() => lanes.stop());
  const downloads = downloadTransfers(options, control);
  wakeOnTaskEnds(lanes, downloads, control);
  for (const lane of lanes.all) closing.defer(forwardAnswers(lane, control));
  closing.defer(giveUpOnTheWireAfterStop(lanes, control));
  const service = watchService({
    lanes,
    clock,
    control,
    now: clock.now,
    unreachableMs: options.unreachableMs,
    logger,
    onActivity: () => watchdog.activity(),
  });
  closing.defer(service.stopHearing);
  return { watchdog, control, lanes, coordinator, downloads, reachability: service.reachability };
}

/** The run's control, heard by the watchdog (anything said is activity) and the log, each until the run closes. */
function controlOf(
  inputs: Pick<RunInputs, 'keys' | 'options' | 'logger' | 'closing'>,
  watchdog: Pick<Watchdog, 'activity'>,
): { control: Control; listeners: number } {
  const { keys, options, logger, closing } = inputs;
  // Every poll, upload and download in flight listens for the interrupt: one per slot and download, plus the queues'.
  const listeners =
    keys.reduce((n, k) => n + k.limits.maxImagesInFlight + k.limits.maxVideosInFlight, 0) +
    options.downloadConcurrency +
    64;
  const control = new Control(logger, listeners);
  closing.defer(control.events.on(() => watchdog.activity()));
  if (logger) closing.defer(control.events.on(logEvents(logger)));
  return { control, listeners };
}

/** Each key's lane, and whether the coordinator its limits are shared through answers (a known wait while it does not). */
function lanesOf(
  inputs: Pick<RunInputs, 'keys' | 'store' | 'options'>,
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
function downloadTransfers(
  options: Pick<ResolvedRunOptions, 'clock' | 'idleTimeoutMs' | 'downloadConcurrency'>,
  control: Control,
): Transfers {
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
