import { setImmediate as yieldToEvents } from 'node:timers/promises';
import type { ManifestTop, ResolvedItem } from '../../manifest/index.js';
import type { Store } from '../../store/index.js';
import type { Control } from '../core/control.js';
import { syncFreshInSteps, syncItems, type ItemsToSync, type SyncView, type SyncSteps } from './manifest-sync.js';

/** How long a step of a first sync holds the event loop: submissions and answers wait no longer than that. */
const SYNC_STEP_MS = 5;

/** The manifest's items to write into the state first; none when the state holds them as they are (a resume). */
export interface ToSync {
  items: ItemsToSync | readonly ResolvedItem[];
  fingerprint?: string | undefined;
}

/**
 * Writes the manifest's items into the state: all of them before the run
 * starts, or on a first sync one step first and the rest a step at a time
 * between the run's own work (each step may make items ready). Nothing here
 * holds the items: 100,000 item objects need not stay in memory for the run.
 */
export class FirstSync {
  /** The rest of a first sync: to write, then being written. */
  private unsynced: SyncSteps | undefined;
  private writing: Promise<void> | undefined;
  private failure: Error | undefined;

  constructor(
    private readonly store: Store,
    private readonly manifest: ManifestTop,
    private readonly options: SyncView,
    private readonly control: Control,
    private toSync: ToSync | undefined,
  ) {}

  private get stepMs(): number {
    return this.options.syncStepMs ?? SYNC_STEP_MS;
  }

  /** Items are still being written: more may come. */
  get syncing(): boolean {
    return this.writing !== undefined;
  }

  /** The first step (or, when the run must see every item first, all of them). */
  async first(): Promise<void> {
    if (!this.toSync) return;
    const { items, fingerprint } = this.toSync;
    this.toSync = undefined;
    // A canary is chosen from every item, and --only selects among them: such a run waits for all of them to be written.
    const steps =
      this.options.canary || this.options.only
        ? undefined
        : await syncFreshInSteps(this.store, this.manifest, items, this.options, fingerprint);
    if (!steps) await syncItems(this.store, this.manifest, items, this.options, fingerprint);
    else if (!(await steps.step(this.stepMs))) this.unsynced = steps;
  }

  /** Every item, now (the run stops before its first submission, and its summary counts them all). */
  async all(): Promise<void> {
    await this.unsynced?.step(Infinity);
    this.unsynced = undefined;
  }

  /** The rest, begun once the first submission is on its way, alongside the run. */
  startRest(): void {
    if (this.unsynced) this.writing = this.rest(this.unsynced);
    this.unsynced = undefined;
  }

  /** Waits for the rest to be written; throws what stopped it. */
  async finished(): Promise<void> {
    await this.writing;
    if (this.failure) throw this.failure;
  }

  private async rest(steps: SyncSteps): Promise<void> {
    try {
      for (let done = false; !done; ) {
        // Written to the end even when the run stops: its summary, and the next run, count every item.
        await yieldToEvents();
        done = await steps.step(this.stepMs);
        this.control.wake();
      }
    } catch (error) {
      this.failure = error as Error;
      this.control.askStop(
        'disk',
        `the manifest's items could not be written to the state (${(error as Error).message}): no new submissions. Fix it and run the same command again: nothing paid is lost.`,
      );
    } finally {
      this.writing = undefined;
      this.control.wake();
    }
  }
}
