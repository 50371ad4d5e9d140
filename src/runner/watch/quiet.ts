import type { Logger } from '../../log/logger.js';
import { waitingFor } from '../../store/waiting.js';
import type { Store } from '../../store/index.js';
import type { Control } from '../core/control.js';
import type { Reachability } from './reachability.js';
import type { QuietLook } from './watchdog.js';

/** What the watchdog asks of the feeder: when the next backoff is due, and which items this run's tasks hold. */
export interface HeldItems {
  nextDue(type: 'image' | 'video'): number | undefined;
  heldIds(): string[];
}

/** What the run knows of its own waits: a quiet run is fine while one of them has its time. */
export interface KnownWaits {
  /** Every key waits for its daily cap until then. */
  capUntil(): number | undefined;
  coordinatorDown(): boolean;
  paused(): boolean;
  waitingForBreaker(): boolean;
  syncing(): boolean;
  /** First polls and backoffs under way, and downloads. */
  timedWaits(): number;
  /** Copies being made, or outputs published to a bucket (or waiting for it to take them again). */
  laterStages(): boolean;
  /** Downloads silent inside their body (each has its time: the idle timeout), and that timeout. */
  stalledDownloads(): { count: number; since: number; idleTimeoutMs: number } | undefined;
}

/**
 * The watchdog's two questions: is a quiet run explained by a known wait (the
 * daily cap, an outage's probe, the coordinator's return, a pause, a backoff,
 * a first poll, a download, the first sync), and what to say when nothing
 * moved for a while: what each state waits for is logged, the scheduler
 * woken, and a stall no wait explains is said as the bug it is.
 */
export class QuietWatch implements QuietLook {
  constructor(
    private readonly store: Store,
    private readonly feeder: HeldItems,
    private readonly reachability: Reachability,
    private readonly control: Control,
    private readonly waits: KnownWaits,
    private readonly now: () => number,
    private readonly logger: Logger | undefined,
  ) {}

  /** Open work remains: a quiet run with none is simply done. */
  hasWork(): boolean {
    const work = this.store.itemReports.workByType();
    return work.image.open + work.video.open > 0;
  }

  explained(): boolean {
    const { waits } = this;
    if (waits.capUntil() !== undefined || this.reachability.isDown || this.reachability.isProbing) return true;
    if (waits.coordinatorDown() || waits.laterStages()) return true;
    if (waits.paused() || waits.waitingForBreaker() || waits.syncing() || waits.timedWaits() > 0) return true;
    const now = this.now();
    return (['image', 'video'] as const).some((type) => (this.feeder.nextDue(type) ?? 0) > now);
  }

  onQuiet(quietMs: number, stalled: boolean): void {
    const waiting = waitingFor(this.store, this.now(), {
      running: true,
      waitingUntil: this.waits.capUntil(),
      unreachableSince: this.reachability.unreachableSince,
      stalled: this.waits.stalledDownloads(),
    });
    const held = this.feeder
      .heldIds()
      .slice(0, 20)
      .map((id) => {
        const item = this.store.items.get(id);
        return item ? { id, state: item.state, attempt: item.attempt, notBefore: item.not_before || null } : { id };
      });
    this.logger?.[stalled ? 'warn' : 'info'](
      { quietMs, waiting, held },
      stalled ? 'stall: nothing moved and no known wait explains it' : 'quiet: waiting',
    );
    if (stalled) this.control.emit({ kind: 'stall', quietMs, waiting });
    this.control.wake();
  }
}
