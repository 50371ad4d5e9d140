import { existsSync } from 'node:fs';
import { hostname } from 'node:os';
import type { Logger } from '../../log/logger.js';
import {
  claimOutputs,
  LEASE_MS,
  OwnerLostError,
  releaseClaim,
  renewClaim,
  type MarkerFile,
  type OutputsHolder,
  type OutputsOwner,
} from '../../sink/index.js';
import type { Control } from '../core/control.js';
import { processAlive } from '../../util/process-alive.js';

/** How long a run's end waits to give its lease up. */
const RELEASE_WAIT_MS = 5_000;

/**
 * The run's hold on the place its outputs go: claimed before anything is
 * paid for, renewed every quarter of the lease while the run lives, given up
 * at its end. A renewal that finds another process holding the place stops
 * the run (exit 4): the other took over after this one's lease lapsed.
 */
export class OutputsLease {
  private holder: OutputsHolder | undefined;
  private timer: NodeJS.Timeout | undefined;
  private renewing: Promise<void> | undefined;

  constructor(
    private readonly place: MarkerFile & { readonly location: string },
    private readonly control: Control,
    private readonly now: () => number,
    private readonly logger: Logger | undefined,
    private readonly leaseMs = LEASE_MS,
    /**
     * Kept in the state: the lease this state's last run could not give up (the
     * place did not answer at its end). The next run of this state takes that
     * holder as gone, on whatever host it ran: it was this state's own run.
     */
    private readonly left?: { get(): string | undefined; set(holder: OutputsHolder | undefined): void },
  ) {}

  /** Whether this run holds the place now: only then does it write there what only the holder may (the state's snapshots). */
  get holds(): boolean {
    return this.holder !== undefined;
  }

  /** Claims the place (see claimOutputs): the run's identity to go on with; what the claim found is said. */
  async claim(owner: OutputsOwner, fresh: boolean, takeOver: boolean): Promise<string> {
    const claimed = await claimOutputs(this.place, this.place.location, owner, {
      me: { host: hostname(), pid: process.pid },
      now: this.now(),
      leaseMs: this.leaseMs,
      takeOver,
      fresh,
      stateExists: existsSync,
      alive: processAlive,
      leftBy: leftHolder(this.left?.get()),
    });
    this.left?.set(undefined);
    this.holder = claimed.holder;
    for (const message of claimed.notices) {
      this.logger?.warn({ place: this.place.location }, message);
      this.control.emit({ kind: 'notice', message });
    }
    this.timer = setInterval(() => this.renew(), this.leaseMs / 4);
    this.timer.unref();
    return claimed.runId;
  }

  /**
   * The run ended: no more renewals, and the lease given up. Given up to a
   * place that does not answer within a few seconds, it is left to lapse: the
   * next run waits for it at most one lease, and this one's exit is not held.
   */
  async release(): Promise<void> {
    clearInterval(this.timer);
    const holder = this.holder;
    this.holder = undefined;
    if (!holder) return;
    let timer: NodeJS.Timeout | undefined;
    const giveUp = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, RELEASE_WAIT_MS);
    });
    const released = (async () => {
      await this.renewing;
      await releaseClaim(this.place, holder);
      return true;
    })().catch(() => false);
    // Not given up: the lease lapses by itself, and this state remembers it was its own.
    if (!(await Promise.race([released, giveUp.then(() => false)]))) this.left?.set(holder);
    clearTimeout(timer);
  }

  private renew(): void {
    const holder = this.holder;
    if (!holder || this.renewing) return;
    this.renewing = renewClaim(this.place, this.place.location, holder, this.now(), this.leaseMs)
      .then((renewed) => {
        if (this.holder) this.holder = renewed;
      })
      .catch((error: unknown) => {
        if (error instanceof OwnerLostError) {
          clearInterval(this.timer);
          this.holder = undefined;
          this.control.askStop('taken-over', error.message);
          return;
        }
        // The place could not be reached to renew: tried again at the next turn; past the lease, another may take it.
        this.logger?.warn({ place: this.place.location, err: error }, 'lease not renewed');
      })
      .finally(() => {
        this.renewing = undefined;
      });
  }
}

function leftHolder(text: string | undefined): OutputsHolder | undefined {
  if (!text) return undefined;
  try {
    return JSON.parse(text) as OutputsHolder;
  } catch {
    return undefined;
  }
}
