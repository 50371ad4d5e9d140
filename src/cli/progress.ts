import type { RunEvent } from '../runner/index.js';
import type { Store } from '../store/index.js';
import { formatDuration } from '../estimate/index.js';
import { liveEta, type Status } from '../report/index.js';

const ETA_REFRESH_MS = 2000;

/**
 * What a run shows while it works: on a terminal one live line (done, in
 * flight, failed, credits, submission rate, ETA); otherwise one plain line per event.
 */
export class Progress {
  private timer: NodeJS.Timeout | undefined;
  private submittedAt: number[] = [];
  private eta: { value: Status['eta']; at: number } = { value: null, at: 0 };

  constructor(
    private readonly out: NodeJS.WriteStream,
    private readonly store: Store,
    private readonly total: number,
  ) {}

  start(): void {
    if (this.out.isTTY) this.timer = setInterval(() => this.draw(), 250);
  }

  onEvent = (event: RunEvent): void => {
    if (event.kind === 'submitted') this.submittedAt.push(Date.now());
    if (this.out.isTTY) return;
    const line = describe(event);
    if (line) this.out.write(`${new Date().toISOString().slice(11, 19)} ${line}\n`);
  };

  private draw(): void {
    const c = this.store.items.counts();
    const { charged, refunded } = this.store.attempts.totals();
    const now = Date.now();
    this.submittedAt = this.submittedAt.filter((t) => t > now - 60_000);
    // The same ETA as `genbatch status`, refreshed every few seconds rather than every frame.
    if (now - this.eta.at > ETA_REFRESH_MS) this.eta = { value: liveEta(this.store, now), at: now };
    const finished = c.done + c.failed + c.rejected + c.blocked + c.skipped;
    const eta = this.eta.value && finished < this.total ? ` · ETA ${formatDuration(this.eta.value.seconds)}` : '';
    const line = `done ${c.done}/${this.total} · in flight ${c.submitting + c.running}${c.queued ? ` · queued ${c.queued}` : ''} · downloading ${c.downloading} · failed ${c.failed + c.rejected + c.blocked + c.skipped} · credits ${charged} charged, ${refunded} refunded · ${this.submittedAt.length} submissions/min${eta}`;
    this.out.write(`\r\x1b[2K${line.slice(0, (this.out.columns ?? 200) - 1)}`);
  }

  stop(): void {
    if (this.timer) {
      clearInterval(this.timer);
      this.draw();
      this.out.write('\n');
    }
  }
}

function describe(e: RunEvent): string | undefined {
  switch (e.kind) {
    case 'submitted':
      return `submitted ${e.itemId} (attempt ${e.attempt}, job ${e.jobId}, ${e.credits} credits)`;
    case 'job-ended':
      return e.status === 'COMPLETED' ? undefined : `job ${e.jobId} of ${e.itemId} ended ${e.status}${e.code ? ` (${e.code})` : ''}`;
    case 'item-final':
      return `${e.itemId}: ${e.state}${e.code ? ` (${e.code}${e.message ? `: ${e.message}` : ''})` : ''}`;
    case 'retrying':
      return `${e.itemId}: new attempt ${e.attempt} after ${e.reason}`;
    case 'waiting':
      return `waiting for ${e.reason} until ${new Date(e.untilMs).toISOString()}`;
    case 'stopping':
      return `stopping: ${e.reason}`;
    case 'notice':
      return `note: ${e.message}`;
  }
}
