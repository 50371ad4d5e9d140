import type { Catalog } from '../api/catalog.js';
import type { Logger } from '../log/logger.js';
import type { ManifestTop } from '../manifest/index.js';
import type { ResolvedRunOptions } from '../options/resolve.js';
import type { OutputSink, SnapshotKeeper } from '../sink/index.js';
import type { Transfers } from '../scheduler/transfers.js';
import type { Store } from '../store/index.js';
import type { RunClock } from '../scheduler/clock.js';
import type { Control } from './core/control.js';
import type { PauseGate } from './core/pause-gate.js';
import type { RunSession } from './core/session.js';
import type { ModerationBreaker } from './feed/breaker.js';
import type { Feeder } from './feed/feeder.js';
import type { Credits } from './keys/credits.js';
import type { KeyLanes, RunKey } from './keys/lanes.js';
import type { KeyRoster } from './keys/roster.js';
import type { FirstSync, ToSync } from './sync/first-sync.js';
import type { DownloadHealth } from './watch/download-health.js';
import type { Reachability } from './watch/reachability.js';
import type { TimedWaits } from './watch/timed-waits.js';
import type { OutputsLease } from './watch/lease.js';
import type { Watchdog } from './watch/watchdog.js';

/**
 * One run's context, built once at its start (parts.ts): what it is built
 * from (its options, resolved once, and what the start opened) and the
 * parts every stage of a job's life shares (all but the life, the feed and
 * the watchdog's questions). Each stage takes it with its own collaborators.
 */
export interface RunContext extends RunInputs {
  readonly clock: RunClock;
  /** Built first: every other part tells it of activity. */
  readonly watchdog: Watchdog;
  /** The run's row and start, set when the run begins. */
  readonly session: RunSession;
  readonly control: Control;
  readonly lanes: KeyLanes;
  readonly credits: Credits;
  readonly feeder: Feeder;
  readonly breaker: ModerationBreaker;
  readonly roster: KeyRoster;
  readonly reachability: Reachability;
  readonly pauseGate: PauseGate;
  readonly downloads: Transfers;
  /** A full disk, or the same download failure again and again, stops the run. */
  readonly downloadHealth: DownloadHealth;
  /** First polls and backoffs under way: reasons for quiet. */
  readonly timedWaits: TimedWaits;
  readonly firstSync: FirstSync;
  /** The run's hold on the place its outputs go: claimed before anything is paid for, renewed, given up at the end. */
  readonly lease: OutputsLease;
  /** With outputs in a bucket: the state's snapshots beside them, while the run changes it and at its end. */
  readonly keeper: SnapshotKeeper | undefined;
  /** Whether the coordinator's database answers: submissions wait for it while it does not (a known wait). */
  readonly coordinator: { down: boolean };
  /** The run's listeners leave the keys' clients (which may outlive it): called once the run ends. */
  detach(): void;
}

/** What a run's start resolved, opened and read for it: the runner takes these as they are. */
export interface RunOpened {
  readonly options: ResolvedRunOptions;
  readonly store: Store;
  readonly manifest: ManifestTop;
  readonly catalog: Catalog | undefined;
  readonly toSync?: ToSync | undefined;
  /** Where verified outputs go, opened from `options.out`. */
  readonly outputs: OutputSink;
  /** --max-credits, else the manifest's budget, net of refunds. */
  readonly budget: number | undefined;
  /** The state's file: the review's thumbnails of the outputs are kept beside it. */
  readonly statePath?: string | undefined;
}

/** What a run is built from: what its start opened, and the keys it goes with. */
export interface RunInputs extends RunOpened {
  /** The run's API keys (one, or a pool), each with its limits. */
  readonly keys: readonly RunKey[];
  readonly logger?: Logger | undefined;
  /** How long nothing may be sent, answered or said before the watchdog looks (tests make it short). */
  readonly quietMs?: number | undefined;
  /** How often a changed state is snapshot to the bucket (tests make it short). */
  readonly snapshotEveryMs?: number | undefined;
  /** How long a claim on the output place lives unrenewed (tests make it short). */
  readonly leaseMs?: number | undefined;
  /** How long a step of a first sync may hold the event loop (tests make every step a few rows). */
  readonly syncStepMs?: number | undefined;
}
