import { runCanary } from './feed/canary.js';
import type { RunEvent, StopKind } from './core/control.js';
import type { EventBus } from '../util/event-bus.js';
import { preflight } from './preflight.js';
import { startUpkeep } from './upkeep.js';
import { buildParts } from './parts.js';
import type { RunInputs, RunParts } from './parts.js';
import type { KeyLanes } from './keys/lanes.js';
import { recover } from './sync/recovery.js';
import { summarize, type RunSummary } from './summary.js';
import type { ItemRow } from '../store/index.js';

export type { RunSummary } from './summary.js';

/**
 * Takes a validated manifest to verified outputs, as fast as the key's
 * limits allow. Its parts are built once (parts.ts); each job's life, stage
 * by stage, is life.ts. The run itself: the first sync, the checks before
 * anything is paid, recovery, the canary, then the feed until nothing can
 * become ready, and every stage settled.
 */
export class Runner {
  private readonly p: RunParts;
  /** Items whose content changed since they were submitted (the summary says so). */
  private changed: string[] = [];

  constructor(inputs: RunInputs) {
    if (inputs.keys.length === 0) throw new Error('a run needs at least one API key');
    this.p = buildParts(inputs);
  }

  /** Every event of the run, to any number of listeners: subscribe before `run()`. */
  get events(): EventBus<RunEvent> {
    return this.p.control.events;
  }

  /** The run's keys, each with its rate windows, slots and daily cap. */
  get lanes(): KeyLanes {
    return this.p.lanes;
  }

  async run(): Promise<RunSummary> {
    const upkeep = startUpkeep(this.p);
    this.p.watchdog.start(this.p.quiet);
    try {
      await upkeep.ready;
      return await this.work();
    } finally {
      // The state's last snapshot before the place is let go: the next holder restores what this run did.
      await this.p.keeper?.end();
      await this.p.lease.release();
      this.p.watchdog.stop();
      this.p.life.close();
      upkeep.stop();
      this.p.detach();
    }
  }

  private async work(): Promise<RunSummary> {
    const { store, control, firstSync, options } = this.p;
    await firstSync.first();
    this.changed = store.itemSync.changedIds();
    if (!(await preflight(this.p))) return this.summary();
    this.p.keeper?.start();
    this.p.life.startAfterDownloads();
    await this.recover();
    const canary = options.canary;
    if (canary && !(await runCanary(store, control, this.p.feeder, canary, () => this.drain()))) {
      this.lanes.stop();
      return this.summary();
    }
    // Begun once the first submission is on its way: a step between each of the checks above would hold it back.
    firstSync.startRest();
    await this.drain();
    this.lanes.stop();
    await firstSync.finished();
    return this.summary();
  }

  /** Stops the run from outside (an interrupt): see Control.stop. */
  stop(kind: StopKind, message: string): void {
    this.p.control.stop(kind, message);
  }

  /** Feeds both types until nothing can become ready, then waits for every job's later stages. */
  private async drain(): Promise<void> {
    await this.p.feed.run();
    await this.p.life.settled();
  }

  /** A killed run's items go on where they were: their jobs (stage 1) and downloads (stage 2), and the done ones checked. */
  private async recover(): Promise<void> {
    const { life, credits } = this.p;
    const { verifying } = await recover({
      store: this.p.store,
      lanes: this.lanes,
      roster: this.p.roster,
      outputs: this.p.outputs,
      now: this.p.clock.now,
      logger: this.p.logger,
      signal: this.p.control.abort.signal,
      startJob: (item, lane) => life.begin(item, lane, credits.priceOf(item), false),
      startDownload: (item, jobId) => life.downloadOutputs(item, jobId),
    });
    life.verify(verifying);
  }

  private summary(): RunSummary {
    const publishing = this.p.outputs.publishing;
    const facts = {
      only: this.p.options.only !== undefined,
      changed: this.changed,
      publishing: publishing && { location: publishing.location, staging: publishing.staging },
      priceOf: (item: ItemRow) => this.p.credits.priceOf(item),
    };
    return summarize(this.p.store, this.p.control.stopReason, this.p.roster, facts);
  }
}
