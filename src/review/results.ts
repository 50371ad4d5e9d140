import type { OutputSink } from '../sink/index.js';
import type { Store } from '../store/index.js';

/** How long decisions made in a row wait for each other before the results files are written once for them all. */
const SETTLE_MS = 300;

/**
 * The results files written again after decisions, so results.jsonl and
 * results.csv carry them at once (no `genbatch report` needed): once for a
 * burst of decisions, one write at a time. A write that fails (a full disk,
 * a bucket away) is left to the next decision, the run's end, or `report`.
 */
export class ResultsAfterDecisions {
  private timer: NodeJS.Timeout | undefined;
  private writing: Promise<void> | undefined;
  private again = false;
  private closed = false;

  constructor(
    private readonly store: () => Store,
    private readonly outputs: OutputSink,
    private readonly report: { title: string; budget: number | null },
  ) {}

  /** A decision was recorded: the files are written once the burst settles. */
  decided(): void {
    if (this.closed) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.write(), SETTLE_MS);
    this.timer.unref();
  }

  /** Writes what is owed now, and waits for it (the app is closing). */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
      await this.write();
    }
    await this.writing;
  }

  private async write(): Promise<void> {
    this.timer = undefined;
    if (this.writing) {
      this.again = true;
      return this.writing;
    }
    this.writing = (async () => {
      try {
        const { writeReport } = await import('../report/index.js');
        await writeReport(this.store(), this.outputs, {
          title: this.report.title,
          html: true,
          sidecars: false,
          now: Date.now(),
          budget: this.report.budget,
        });
      } catch {
        // Owed to the next decision, the run's end, or `genbatch report`.
      } finally {
        this.writing = undefined;
      }
    })();
    await this.writing;
    if (this.again) {
      this.again = false;
      await this.write();
    }
  }
}
