import type { Transfers } from '../scheduler/transfers.js';
import type { Store } from '../store/index.js';
import type { RunClock } from './core/clock.js';
import type { Control } from './core/control.js';
import type { PauseGate } from './core/pause-gate.js';
import type { RunSession } from './core/session.js';
import type { ModerationBreaker } from './feed/breaker.js';
import type { Feeder } from './feed/feeder.js';
import type { Credits } from './keys/credits.js';
import type { KeyLanes } from './keys/lanes.js';
import type { KeyRoster } from './keys/roster.js';
import type { FirstSync } from './sync/first-sync.js';
import type { DownloadHealth } from './watch/download-health.js';
import type { Reachability } from './watch/reachability.js';
import type { TimedWaits } from './watch/timed-waits.js';
import type { Watchdog } from './watch/watchdog.js';

/** The parts every stage of a job's life shares: all but the life, the feed and the watchdog's questions. */
export interface Shared {
  readonly store: Store;
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
  readonly waits: TimedWaits;
  readonly firstSync: FirstSync;
  /** Whether the coordinator's database answers: submissions wait for it while it does not (a known wait). */
  readonly coordinator: { down: boolean };
  /** The run's listeners leave the keys' clients (which may outlive it): called once the run ends. */
  detach(): void;
}
