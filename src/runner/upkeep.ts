import { combinedLimits } from '../scheduler/limits.js';
import { watchSteering } from './watch/steering-watch.js';
import { watchDecisions } from './watch/decisions-watch.js';
import { countEvents } from './watch/counting.js';
import { keepCoordinatorLeases } from './keys/coordination.js';
import type { Logger } from '../log/logger.js';
import type { RunClock } from '../scheduler/clock.js';
import type { Transfers } from '../scheduler/transfers.js';
import type { OutputSink, Publishing } from '../sink/index.js';
import type { Store } from '../store/index.js';
import type { Control } from './core/control.js';
import type { PauseSwitch } from './core/pause-switch.js';
import type { RunSession } from './core/session.js';
import type { ModerationBreaker } from './feed/breaker.js';
import type { Credits } from './keys/credits.js';
import type { KeyLanes } from './keys/lanes.js';
import type { Reachability } from './watch/reachability.js';

/** What the upkeep records, reads and steers. */
export interface UpkeepDeps {
  readonly store: Store;
  readonly clock: RunClock;
  readonly control: Control;
  readonly logger?: Logger | undefined;
  /** The run's row, begun here. */
  readonly session: RunSession;
  readonly lanes: KeyLanes;
  /** Where outputs go (the bucket's trouble is said), and how long a transfer may idle (status reads it). */
  readonly outputs: OutputSink;
  readonly idleTimeoutMs: number;
  /** What the heartbeat records of why the run waits. */
  readonly waits: {
    readonly credits: Pick<Credits, 'waitingUntil'>;
    readonly reachability: Pick<Reachability, 'unreachableSince'>;
    readonly downloads: Pick<Transfers, 'stalled'>;
  };
  readonly pauseSwitch: PauseSwitch;
  /** Told the blocked count every process of the key shares. */
  readonly breaker: Pick<ModerationBreaker, 'sharedBlocked'>;
}

const HEARTBEAT_MS = 1_000;

/**
 * The run's upkeep while it works, begun with it: a heartbeat in the state
 * (so status can tell a live run from a killed one, and says why it waits),
 * the steering row another shell writes (pause, resume, drain), and with a
 * coordinator the leases and the blocked count shared by every process;
 * the counts `genbatch metrics` reads; and the bucket's trouble said as events.
 */
export function startUpkeep(parts: UpkeepDeps): { ready: Promise<void>; stop(): void } {
  const { now, timeScale } = parts.clock;
  const { store, lanes, clock, breaker } = parts;
  const { credits, reachability, downloads } = parts.waits;
  // The limits the run paces to, all keys together: status's ETA reads them.
  const limits = combinedLimits(lanes.all.map((l) => l.limits));
  const startedAt = now();
  const runId = store.runs.begin(startedAt, {
    limits,
    timeScale,
    outDir: parts.outputs.location,
    idleTimeoutMs: parts.idleTimeoutMs,
  });
  parts.session.begin(runId, startedAt);
  // Each key's own cap, as its /me and the flags settled it: metrics says how much of it a key day used.
  store.setMeta(
    'key_daily_caps',
    JSON.stringify(Object.fromEntries(lanes.all.map((l) => [l.fingerprint, l.limits.dailyCap]))),
  );
  const stopCounting = countEvents(store, parts.control.events, now, parts.logger);
  const publishing = parts.outputs.publishing;
  const stopWatchingBucket = publishing && watchBucket(publishing, parts.control);
  const beat = () =>
    store.runs.beat(runId, now(), {
      waitingUntil: credits.waitingUntil,
      unreachableSince: reachability.unreachableSince,
      stalled: downloads.stalled(),
      bucket: publishing?.trouble,
    });
  const heartbeat = setInterval(beat, HEARTBEAT_MS);
  heartbeat.unref();
  const inFlight = () => lanes.all.reduce((n, l) => n + l.busy, 0);
  const control = { store, control: parts.control, pause: parts.pauseSwitch, now, inFlight };
  const stopWatchingControl = watchSteering(control);
  const stopWatchingDecisions = watchDecisions(store, parts.control, clock);
  const shared = keepCoordinatorLeases(lanes, clock, (blocked) => {
    breaker.sharedBlocked = blocked;
  });
  return {
    ready: shared?.ready ?? Promise.resolve(),
    stop: () => {
      clearInterval(heartbeat);
      stopWatchingControl();
      stopWatchingDecisions();
      shared?.stop();
      stopCounting();
      stopWatchingBucket?.();
      store.runs.end(runId, now());
    },
  };
}

/** The bucket's trouble as the run's events: once when it begins (with when its calls give up), once when it ends. */
function watchBucket(publishing: Publishing, control: Control): () => void {
  let down: { since: number; givesUpAt: number } | undefined;
  return publishing.watch((trouble) => {
    if (trouble && !down) {
      down = { since: trouble.since, givesUpAt: trouble.givesUpAt };
      control.emit({ kind: 'bucket-outage', phase: 'down', ...down, code: trouble.code });
    } else if (!trouble && down) {
      control.emit({ kind: 'bucket-outage', phase: 'up', ...down });
      down = undefined;
    }
  });
}
