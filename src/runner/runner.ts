import type { RunEvent, Stop, StopKind } from './core/control.js';
import type { EventBus } from '../util/event-bus.js';
import { buildParts } from './parts.js';
import type { RunInputs, RunParts } from './parts.js';
import type { KeyLanes } from './keys/lanes.js';
import type { RunSummary } from './summary.js';

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
  private readonly closing: RunInputs['closing'];
  /** Where the run's close stack stood before its parts were built: the run's end unwinds them to it. */
  private readonly mark: number;

  constructor(inputs: RunInputs) {
    if (inputs.keys.length === 0) throw new Error('a run needs at least one API key');
    this.closing = inputs.closing;
    this.mark = inputs.closing.mark();
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

  /**
   * Runs it to its summary. Its end unwinds the run's close stack (RunInputs.closing) to where it stood before the
   * parts were built: each part let go once, the last built first; what opened the run stays open for its owner.
   */
  async run(): Promise<RunSummary> {
    try {
      return await this.work();
    } finally {
      await this.closing.unwindTo(this.mark);
    }
  }

  private async work(): Promise<RunSummary> {
    const { store, firstSync } = this.p;
    await this.p.open();
    await firstSync.first();
    this.changed = store.itemSync.changedIds();
    const refused = await this.p.preflight();
    if (refused) return this.stoppedFor(refused);
    await this.p.recover();
    const canary = await this.p.canary(() => this.drain());
    if (canary !== 'passed') return canary === 'stopped' ? this.summary() : this.stoppedFor(canary);
    // Begun once the first submission is on its way: a step between each of the checks above would hold it back.
    firstSync.startRest();
    await this.drain();
    await firstSync.finished();
    return this.summary();
  }

  /** Asks the run to stop from outside (an interrupt, a drain): see Control.askStop. */
  stop(kind: StopKind, message: string): void {
    this.p.control.askStop(kind, message);
  }

  /** Why it stops, once it does: the first reason asked, or an interrupt whenever it lands. */
  get stopReason(): Stop | undefined {
    return this.p.control.stopReason;
  }

  private stoppedFor(stop: Stop): RunSummary {
    this.p.control.askStop(stop.kind, stop.message);
    return this.summary();
  }

  /** Feeds both types until nothing can become ready, then waits for every job's later stages. */
  private async drain(): Promise<void> {
    await this.p.feed.run();
    await this.p.life.settled();
  }

  private summary(): RunSummary {
    return this.p.summary(this.changed);
  }
}
