import type { Catalog } from '../api/catalog.js';
import type { Job } from '../api/index.js';
import type { ManifestTop } from '../manifest/index.js';
import type { ItemRow, Store } from '../store/index.js';
import { runCanary } from './feed/canary.js';
import type { RunEvent, StopKind } from './core/control.js';
import type { EventBus } from '../util/event-bus.js';
import { recordCrash } from './item/crash.js';
import { DownloadHealth } from './watch/download-health.js';
import { downloadJob, type DownloadDeps } from './item/download-task.js';
import { FeedLoops } from './feed/loops.js';
import type { ToSync } from './sync/first-sync.js';
import { preflight } from './preflight.js';
import { startUpkeep } from './upkeep.js';
import { buildParts, type RunParts } from './parts.js';
import { downloadTaskDeps, jobTaskDeps, type RunActs } from './task-deps.js';
import { JobTask, type JobTaskDeps } from './item/job-task.js';
import type { KeyLane, KeyLanes, LaneKey } from './keys/lanes.js';
import type { RunOptions } from './options.js';
import { QuietWatch } from './watch/quiet.js';
import { recover } from './sync/recovery.js';
import { Publisher } from './publish/publisher.js';
import { Finisher } from './finish/finisher.js';
import { summarize, type RunSummary } from './summary.js';
import { Watchdog } from './watch/watchdog.js';

export type { RunSummary } from './summary.js';

/** Saved outputs that may wait to be published before submissions wait for the bucket: 2 GiB of local disk. */
const MAX_UNPUBLISHED_BYTES = 2 * 1024 ** 3;
/** Two minutes of the service's time (two seconds at the least) with nothing sent, answered or said: the watchdog looks. */
const QUIET_MS = 120_000;
const QUIET_FLOOR_MS = 2_000;

/**
 * Takes a validated manifest to verified outputs on disk, as fast as the key's
 * limits allow: the composition of the run's clock, control, credits, feed
 * loops, keys and downloads. Each item's own life is a JobTask, then a
 * download; each reports to the run through the narrow deps built here.
 */
export class Runner {
  private readonly p: RunParts;
  private readonly watchdog: Watchdog;
  private readonly feed: FeedLoops;
  private readonly quiet: QuietWatch;
  private readonly downloadHealth = new DownloadHealth();
  private readonly settings: JobTaskDeps['settings'] & { runStartedAt: number };
  private readonly jobDeps: JobTaskDeps;
  private readonly downloadDeps: DownloadDeps;
  /** Outputs going to a bucket: each saved one is published by it. */
  private readonly publisher: Publisher | undefined;
  /** Each saved image output's web copies. */
  private readonly finisher: Finisher | undefined;
  /** Waits that have their time (first polls, backoffs) under way now. */
  private timedWaits = 0;
  private runId = 0;
  private changed: string[] = [];
  /** The done items' outputs being checked on disk, alongside the run. */
  private verifying: Promise<void> | undefined;

  constructor(
    /** The run's API keys (one, or a pool), each with its limits. */
    keys: readonly LaneKey[],
    private readonly store: Store,
    manifest: ManifestTop,
    private readonly opts: RunOptions,
    catalog: Catalog | undefined,
    toSync?: ToSync,
  ) {
    if (keys.length === 0) throw new Error('a run needs at least one API key');
    const hooks = { activity: () => this.watchdog.activity(), runId: () => this.runId };
    const p = buildParts({ keys, store, manifest, opts, catalog, toSync }, hooks);
    this.p = p;
    this.watchdog = new Watchdog({
      now: opts.now,
      quietMs: opts.quietMs ?? Math.max(QUIET_FLOOR_MS, p.clock.scaled(QUIET_MS)),
      hasWork: () => this.hasOpenWork(),
      explained: () => this.quiet.explained(),
      onQuiet: (quietMs, stalled) => this.quiet.quiet(quietMs, stalled),
    });
    this.publisher = publisherOf(p, opts);
    this.finisher = asksFinishing(manifest.manifest) ? finisherOf(p, opts) : undefined;
    this.feed = new FeedLoops({
      ...p,
      publisher: this.publisher,
      syncing: () => p.firstSync.syncing,
      idle: () => this.idle(),
      startJob: (item, lane, price) => this.startJob(item, lane, price, true),
    });
    this.quiet = new QuietWatch(store, p.feeder, p.reachability, p.control, this.knownWaits(), opts.now, opts.logger);
    this.settings = {
      outputs: opts.outputs,
      maxRetries: opts.maxRetries,
      idleTimeoutMs: opts.idleTimeoutMs,
      runStartedAt: 0,
      logger: opts.logger,
    };
    const acts: RunActs = {
      accepted: (itemId) => this.feed.answered(itemId),
      completed: (itemId, jobId, job) => this.startDownload(itemId, jobId, job),
      timed: (wait) => this.timed(wait),
      downloadEnded: (failure) => this.downloadHealth.ended(failure, p.control),
    };
    this.jobDeps = jobTaskDeps(p, this.settings, opts, acts);
    this.downloadDeps = downloadTaskDeps(p, manifest, opts, acts);
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
    this.settings.runStartedAt = this.opts.now();
    const upkeep = startUpkeep(this.p, this.opts);
    this.runId = upkeep.runId;
    this.watchdog.start();
    try {
      await upkeep.ready;
      return await this.work();
    } finally {
      this.watchdog.stop();
      upkeep.stop();
      this.p.detach();
    }
  }

  private async work(): Promise<RunSummary> {
    const { store, opts } = this;
    const { control, firstSync } = this.p;
    await firstSync.first();
    this.changed = store.itemSync.changedIds();
    if (!(await preflight(store, opts, control, firstSync))) return this.summary();
    // The finisher first: a staged copy found gone is unrecorded (to be made again) before the publisher takes up the rest.
    this.finisher?.start();
    this.publisher?.start();
    await this.recover();
    const canary = opts.canary;
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

  /** Feeds both types until nothing can become ready, then waits for every task and download. */
  private async drain(): Promise<void> {
    await this.feed.run();
    // Outputs found gone from disk join the downloads: the feed loops may have ended before the check did.
    await this.verifying;
    await Promise.all(this.lanes.all.flatMap((lane) => [lane.slots.image.onIdle(), lane.slots.video.onIdle()]));
    await this.p.downloads.onIdle();
    // Copies are written through the sink (published with the outputs when it is a bucket): made before the last wait.
    await this.finisher?.onIdle();
    await this.publisher?.onIdle();
  }

  private async recover(): Promise<void> {
    const { verifying } = await recover({
      store: this.store,
      lanes: this.lanes,
      roster: this.p.roster,
      outputs: this.opts.outputs,
      now: this.opts.now,
      logger: this.opts.logger,
      signal: this.p.control.abort.signal,
      startJob: (item, lane) => this.startJob(item, lane, this.p.credits.priceOf(item), false),
      startDownload: (itemId, jobId) => this.startDownload(itemId, jobId),
    });
    this.verifying = verifying.finally(() => {
      this.verifying = undefined;
      this.p.control.wake();
    });
  }

  /** The item's job task on `lane`; `assign`: its credits count against the budget and the key's cap from now. */
  private startJob(item: ItemRow, lane: KeyLane, price: number | undefined, assign: boolean): void {
    this.p.feeder.claim(item);
    const credits = this.p.credits.forAttempt(item, lane.cap, price, assign);
    void lane.slots[item.type].start(() =>
      new JobTask(this.jobDeps, lane, item, credits)
        .run()
        .catch((error: unknown) => recordCrash(this.store, this.opts, item.id, error))
        .finally(() => {
          credits.close();
          this.p.feeder.release(item.id);
          if (!lane.active) this.p.roster.settleForLeftKey(item.id, lane);
        }),
    );
  }

  private startDownload(itemId: string, jobId: string, fresh?: Job): void {
    void this.p.downloads.add(itemId, (progress) =>
      downloadJob(this.downloadDeps, this.p.roster.laneOfJob(itemId), itemId, jobId, progress, fresh)
        .catch((error: unknown) => recordCrash(this.store, this.opts, itemId, error))
        .finally(() => {
          if (this.store.queue.hasDependents(itemId)) this.p.control.wake();
        }),
    );
  }

  private idle(): boolean {
    const { downloads } = this.p;
    const busy = this.p.firstSync.syncing || this.verifying !== undefined || !this.lanes.idle();
    return !busy && downloads.size === 0 && downloads.pending === 0 && this.p.feeder.held === 0;
  }

  private hasOpenWork(): boolean {
    const work = this.store.itemReports.workByType();
    return work.image.open + work.video.open > 0;
  }

  private summary(): RunSummary {
    const publishing = this.opts.outputs.publishing;
    const facts = {
      only: this.opts.only !== undefined,
      changed: this.changed,
      publishing: publishing && { location: publishing.location, staging: publishing.staging },
    };
    return summarize(this.store, this.p.control.stopReason, this.p.roster, facts);
  }

  private timed<T>(wait: Promise<T>): Promise<T> {
    this.timedWaits++;
    return wait.finally(() => this.timedWaits--);
  }

  private knownWaits() {
    return {
      capUntil: () => this.p.credits.waitingUntil,
      coordinatorDown: () => this.p.coordinator.down,
      paused: () => this.p.pauseGate.isPaused,
      waitingForBreaker: () => this.feed.waitingForBreaker,
      syncing: () => this.p.firstSync.syncing,
      timedWaits: () => this.timedWaits + this.p.downloads.pending,
      publishing: () => (this.publisher?.busy ?? false) || (this.finisher?.busy ?? false),
      stalledDownloads: () => {
        const stalled = this.p.downloads.stalled();
        return stalled && { ...stalled, idleMs: this.opts.idleTimeoutMs };
      },
    };
  }
}

/** With outputs going to a bucket, the publisher of the saved ones, hearing of each as it is saved. */
function publisherOf(p: RunParts, opts: RunOptions): Publisher | undefined {
  const publishing = opts.outputs.publishing;
  if (!publishing) return undefined;
  const publisher = new Publisher({
    store: p.store,
    control: p.control,
    publishing,
    now: opts.now,
    maxWaitingBytes: opts.maxUnpublishedBytes ?? MAX_UNPUBLISHED_BYTES,
    logger: opts.logger,
  });
  p.control.events.on((event) => {
    if (event.kind === 'downloaded') publisher.saved(event.jobId, event.output);
    else if (event.kind === 'derived') publisher.copied(event.itemId, event.jobId, event.output, event.path);
  });
  return publisher;
}

/** The maker of each saved image output's web copies, hearing of each output as it is saved. */
function finisherOf(p: RunParts, opts: RunOptions): Finisher {
  const finisher = new Finisher({
    store: p.store,
    control: p.control,
    outputs: opts.outputs,
    now: opts.now,
    logger: opts.logger,
  });
  p.control.events.on((event) => {
    if (event.kind === 'downloaded') finisher.saved(event.itemId, event.jobId, event.output);
  });
  return finisher;
}

/**
 * Whether the manifest asks for web copies or checks anywhere: without any,
 * no finisher is made (its look at the state for what is left to finish
 * reads every output's item: 80 ms of a 100,000-item restart).
 */
function asksFinishing(manifest: ManifestTop['manifest']): boolean {
  const asks = (part: { derivatives?: unknown; checks?: unknown } | undefined) =>
    part?.derivatives !== undefined || part?.checks !== undefined;
  return asks(manifest) || asks(manifest.defaults) || manifest.items.some(asks);
}
