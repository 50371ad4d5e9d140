import type { Control, DownloadFailure } from '../core/control.js';

/** Downloads that failed for the same reason in a row before the run stops taking new work. */
const SAME_FAILURE_STREAK = 3;

/**
 * Tells a disk or storage that keeps refusing outputs from one bad output:
 * a full or unwritable disk at once, any other reason when it repeats
 * (`SAME_FAILURE_STREAK` items in a row). A success resets the count.
 */
export class DownloadHealth {
  private streak: { code: string; count: number } | undefined;

  /** The reason to stop taking new work, if this outcome makes one. */
  note(failure: DownloadFailure | undefined): string | undefined {
    if (!failure) {
      this.streak = undefined;
      return undefined;
    }
    if (failure.itemOnly) return undefined;
    if (failure.disk) return failure.message;
    this.streak =
      this.streak?.code === failure.code
        ? { code: failure.code, count: this.streak.count + 1 }
        : { code: failure.code, count: 1 };
    return this.streak.count >= SAME_FAILURE_STREAK
      ? `${SAME_FAILURE_STREAK} downloads in a row failed the same way (${failure.code}): ${failure.message}`
      : undefined;
  }

  /** A download succeeded (undefined) or gave up: a full or unwritable disk, or the same failure again and again, stops the run. */
  ended(failure: DownloadFailure | undefined, control: Control): void {
    const reason = this.note(failure);
    if (reason)
      control.askStop(
        'disk',
        `outputs cannot be saved: ${reason}. No new submissions; jobs already paid for were polled and recorded. Fix it (free space, permissions, or another --out) and run the same command again: it downloads what was paid for without paying again.`,
      );
  }
}
