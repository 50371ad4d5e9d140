import { readdir, rm } from 'node:fs/promises';
import { setImmediate as yieldToEvents } from 'node:timers/promises';
import { join } from 'node:path';
import PQueue from 'p-queue';
import type { Job } from '../api/index.js';
import type { Catalog } from '../api/catalog.js';
import { priceOf } from '../estimate/prices.js';
import type { ManifestTop, ResolvedItem } from '../manifest/index.js';
import { combinedLimits } from '../scheduler/limits.js';
import type { ItemProblem, ItemRow, ItemState, Store } from '../store/index.js';
import type { ItemSpec } from './bodies.js';
import { RunClock } from './clock.js';
import {
  PollWait,
  type DownloadFailure,
  type RunContext,
  type RunEvent,
  type RunOptions,
  type StopKind,
} from './context.js';
import { FirstPoll } from './first-poll.js';
import { SendBatch } from './send-batch.js';
import { Control } from './control.js';
import { claimOutputDir, probeOutputDir } from '../download/output-dir.js';
import { checkOutput } from '../download/verify.js';
import { DownloadHealth } from './download-health.js';
import { downloadJob } from './download-task.js';
import { canaryRecord, chooseCanary, judgeCanary, saveCanary } from './canary.js';
import { Feeder, type NextItem } from './feeder.js';
import { Gates, type Release } from './gates.js';
import { JobTask } from './job-task.js';
import { coordinatorNotices, keepCoordinatorLeases } from './coordination.js';
import { KeyRoster } from './key-roster.js';
import { KeyLane, KeyLanes, type JobType, type LaneKey } from './lanes.js';
import type { Reachability } from './reachability.js';
import { watchService } from './service-watch.js';
import { Watchdog } from './watchdog.js';
import { PauseGate } from './pause-gate.js';
import { watchRunControl } from './control-watch.js';
import { waitingFor } from '../report/waiting.js';
import { syncFreshInSteps, syncItems, type ItemsToSync, type SyncSteps } from './sync.js';

/** What a run did; the CLI decides the exit code from it. */
export interface RunSummary {
  counts: Record<ItemState, number>;
  credits: { charged: number; refunded: number };
  stop?: { kind: StopKind; message: string };
  /** Items whose content changed after they were submitted: kept, not resubmitted. */
  changed: string[];
  failures: Record<string, number>;
  /** The items behind `failures`, in manifest order (the first 20). */
  problems: ItemProblem[];
  /** Items the state has that the manifest no longer has: not run, not counted. */
  removed: number;
  /** With --only: the items not selected, left for a later run (`counts` are the selected ones'). */
  notSelected?: number;
  /** Items whose attempt was sent with a key this run lacks (by fingerprint): they wait for a run with it. */
  keysMissing: Record<string, number>;
  /** Keys the service refused during the run (by fingerprint), and how many items wait for each. */
  keysRefused: Record<string, { code: string; message: string; waiting: number }>;
}

const HEARTBEAT_MS = 1_000;
/** Two minutes of the service's time (two seconds at the least) with nothing sent, answered or said: the watchdog looks. */
const QUIET_MS = 120_000;
const QUIET_FLOOR_MS = 2_000;
/** How long a step of a first sync holds the event loop: submissions and answers wait no longer than that. */
const SYNC_STEP_MS = 5;

/**
 * Takes a validated manifest to verified outputs on disk, as fast as the key's
 * limits allow: the composition of the run's clock, control, gates, feeder,
 * buckets and slots. Each item's own life is a JobTask, then a download.
 */
export class Runner implements RunContext {
  readonly uploadFailures = new Map<string, number>();
  readonly pollWait: PollWait;
  readonly firstPoll: FirstPoll;
  readonly sends: SendBatch;
  readonly lanes: KeyLanes;
  readonly reachability: Reachability;
  readonly pauseGate = new PauseGate();
  runStartedAt = 0;
  private readonly watchdog: Watchdog;
  /** Waits that have their time (first polls, backoffs) under way now. */
  private timedWaits = 0;
  /** The coordinator's database answers nothing: submissions wait for it (a known wait). */
  private coordinatorDown = false;
  private readonly clock: RunClock;
  private readonly control: Control;
  private readonly gates: Gates;
  private readonly feeder: Feeder;
  private readonly downloads: PQueue;
  /** The credits of items given to a key whose submissions have not reached the gate yet (its cap and the budget count them). */
  private readonly assigned = new Map<string, () => void>();
  /** Until when every key waits for its daily cap, while they all do. */
  private waitingUntil: number | undefined;
  private readonly downloadHealth = new DownloadHealth();
  private runId = 0;
  private changed: string[] = [];
  /** The rest of a first sync: to write, then being written. */
  private unsynced: SyncSteps | undefined;
  private syncing: Promise<void> | undefined;
  private syncFailure: Error | undefined;
  /** The done items' outputs being checked on disk, alongside the run. */
  private verifying: Promise<void> | undefined;
  private get syncStepMs(): number {
    return this.opts.syncStepMs ?? SYNC_STEP_MS;
  }
  /** Feed loops waiting for the moderation breaker: an answered submission wakes them. */
  private breakerWaits = 0;
  /** Which key each item's attempt belongs to, and what becomes of the items of a key that is missing or leaves. */
  private readonly roster: KeyRoster;

  constructor(
    /** The run's API keys (one, or a pool), each with its limits. */
    keys: readonly LaneKey[],
    readonly store: Store,
    readonly manifest: ManifestTop,
    readonly opts: RunOptions,
    private readonly catalog: Catalog | undefined,
    /** The manifest's items to write into the state first; none when the state holds them as they are (a resume). */
    private toSync?: { items: ItemsToSync | readonly ResolvedItem[]; fingerprint?: string | undefined },
  ) {
    if (keys.length === 0) throw new Error('a run needs at least one API key');
    this.clock = new RunClock(opts.now, opts.timeScale);
    // Every poll, upload and download in flight listens for the interrupt: one per slot and download, plus the queues'.
    const listeners =
      keys.reduce((n, k) => n + k.limits.imagesInFlight + k.limits.videosInFlight, 0) + opts.downloadConcurrency + 64;
    this.watchdog = new Watchdog({
      now: opts.now,
      quietMs: opts.quietMs ?? Math.max(QUIET_FLOOR_MS, this.clock.scaled(QUIET_MS)),
      hasWork: () => {
        const work = this.store.items.workByType();
        return work.image.open + work.video.open > 0;
      },
      explained: () => this.quietExplained(),
      onQuiet: (quietMs, stalled) => this.quiet(quietMs, stalled),
    });
    this.control = new Control(
      opts.logger,
      (event) => {
        this.watchdog.activity();
        opts.onEvent?.(event);
      },
      listeners,
    );
    const noticed = coordinatorNotices(this.control);
    const coordinatorSaid = (reachable: boolean, message: string) => {
      this.coordinatorDown = !reachable;
      noticed(reachable, message);
    };
    this.gates = new Gates(
      store,
      { maxCredits: opts.maxCredits, maxBlocked: opts.maxBlocked },
      this.clock,
      this.control,
      () => this.capWaitChanged(),
      coordinatorSaid,
    );
    this.feeder = new Feeder(store, this.clock, this.control);
    this.pollWait = new PollWait(opts.pollWaitSeconds);
    this.firstPoll = new FirstPoll(() => this.clock.scaled(this.pollWait.seconds * 1000));
    this.sends = new SendBatch(store);
    this.lanes = new KeyLanes(
      keys.map((k) => new KeyLane(k, store, this.clock, this.control.noNewWork.signal, listeners, coordinatorSaid)),
    );
    this.roster = new KeyRoster(this.lanes, store, this.feeder, this.control, opts.now);
    this.reachability = watchService({
      lanes: this.lanes,
      clock: this.clock,
      control: this.control,
      now: opts.now,
      unreachableMs: opts.unreachableMs,
      logger: opts.logger,
      onActivity: () => this.watchdog.activity(),
    });
    this.downloads = new PQueue({ concurrency: opts.downloadConcurrency });
    // A task's own last act cannot wake the feeder: its queue still counts it busy. Woken once the queue has let it go, the run ends at once.
    const wake = () => this.control.wake();
    for (const lane of this.lanes.all) {
      lane.slots.image.onTaskEnd(wake);
      lane.slots.video.onTaskEnd(wake);
    }
    // A download frees no slot and never puts an item back: only the queue's end (the run may be over) or an item with dependents (they may be ready) wakes the feeders.
    this.downloads.on('idle', wake);
  }

  async run(): Promise<RunSummary> {
    const { store, opts } = this;
    this.runStartedAt = opts.now();
    // The limits the run paces to, all keys together: status's ETA reads them.
    const limits = combinedLimits(this.lanes.all.map((l) => l.limits));
    const runId = (this.runId = store.runs.begin(this.runStartedAt, {
      limits,
      timeScale: opts.timeScale,
      outDir: opts.outDir,
    }));
    // A heartbeat, so status can tell a live run from a killed one and when submissions resume.
    const heartbeat = setInterval(
      () => store.runs.beat(runId, opts.now(), this.waitingUntil, this.reachability.unreachableSince),
      HEARTBEAT_MS,
    );
    heartbeat.unref();
    this.watchdog.start();
    const stopWatchingControl = watchRunControl({
      store,
      gate: this.pauseGate,
      control: this.control,
      now: opts.now,
      inFlight: () => this.lanes.all.reduce((n, l) => n + l.busy, 0),
    });
    const shared = keepCoordinatorLeases(this.lanes, this.clock, (blocked) => (this.gates.sharedBlocked = blocked));
    try {
      await shared?.ready;
      return await this.work();
    } finally {
      clearInterval(heartbeat);
      this.watchdog.stop();
      stopWatchingControl();
      shared?.stop();
      store.runs.end(runId, opts.now());
    }
  }

  private async work(): Promise<RunSummary> {
    await this.syncFirstItems();
    this.changed = this.store.items.changedIds();
    // Before anything is paid for: a dir that cannot take outputs stops the run here.
    const unwritable = await probeOutputDir(this.opts.outDir);
    if (unwritable) {
      await this.unsynced?.step(Infinity); // every item in the state, for the summary and the next run
      this.control.stop(
        'disk',
        `${unwritable.message}. Nothing was submitted. Fix it (or pass --out DIR) and run the same command again: what was already paid for is downloaded then, without paying again.`,
      );
      return this.summary();
    }
    if (this.opts.only && this.store.items.select(selects(this.opts.only)).length === 0) {
      this.control.stop(
        'nothing-selected',
        `--only ${this.opts.only.join(' --only ')} matches no item of the manifest: nothing was submitted`,
      );
      return this.summary();
    }
    await claimOutputDir(this.opts.outDir, {
      state: this.store.db.name,
      runId: this.store.meta('run_id')!,
      rehearsal: this.opts.rehearsal ?? false,
    });
    await this.recover();
    if (this.opts.canary && !(await this.canary(this.opts.canary))) {
      this.lanes.stop();
      return this.summary();
    }
    // Begun once the first submission is on its way: a step between each of the checks above would hold it back.
    if (this.unsynced) this.syncing = this.syncRest();
    await this.drain();
    this.lanes.stop();
    await this.syncing;
    if (this.syncFailure) throw this.syncFailure;
    return this.summary();
  }

  /**
   * Writes the manifest's items into the state: all of them, or on a first
   * sync the first step's, the rest left to `syncRest`. Neither this frame nor
   * `work`'s holds the items: 100,000 item objects need not stay in memory
   * for the whole run.
   */
  private async syncFirstItems(): Promise<void> {
    if (!this.toSync) return;
    const { items, fingerprint } = this.toSync;
    this.toSync = undefined;
    // A canary is chosen from every item, and --only selects among them: such a run waits for all of them to be written.
    const steps =
      this.opts.canary || this.opts.only
        ? undefined
        : await syncFreshInSteps(this.store, this.manifest, items, this.opts, fingerprint);
    if (!steps) await syncItems(this.store, this.manifest, items, this.opts, fingerprint);
    else if (!(await steps.step(this.syncStepMs))) this.unsynced = steps;
  }

  /** The rest of a first sync, a step at a time between the run's own work; each step may make items ready. */
  private async syncRest(): Promise<void> {
    const steps = this.unsynced!;
    this.unsynced = undefined;
    try {
      for (let done = false; !done; ) {
        // Written to the end even when the run stops: its summary, and the next run, count every item.
        await yieldToEvents();
        done = await steps.step(this.syncStepMs);
        this.control.wake();
      }
    } catch (error) {
      this.syncFailure = error as Error;
      this.control.stop(
        'disk',
        `the manifest's items could not be written to the state (${(error as Error).message}): no new submissions. Fix it and run the same command again: nothing paid is lost.`,
      );
    } finally {
      this.syncing = undefined;
      this.control.wake();
    }
  }

  /** Feeds both types until nothing can become ready, then waits for every task and download. */
  private async drain(): Promise<void> {
    await Promise.all([this.feed('image'), this.feed('video')]);
    // Outputs found gone from disk join the downloads: the feed loops may have ended before the check did.
    await this.verifying;
    await Promise.all(this.lanes.all.flatMap((lane) => [lane.slots.image.onIdle(), lane.slots.video.onIdle()]));
    await this.downloads.onIdle();
  }

  /**
   * Runs the canary's items alone, to their end; false (the run stopped) when
   * they fail more than allowed. A canary that passed, in this run or an
   * earlier one, is not run again; one that failed is judged again from its
   * items' states (retry or edit them first), never chosen anew.
   */
  private async canary(opts: NonNullable<RunOptions['canary']>): Promise<boolean> {
    const { store } = this;
    const earlier = canaryRecord(store);
    if (earlier?.passed) return true;
    const ids = earlier?.ids ?? chooseCanary(store, opts.size);
    if (!earlier) saveCanary(store, { ids, passed: false });
    this.control.emit({
      kind: 'notice',
      message: `canary: ${ids.length} item${ids.length === 1 ? '' : 's'} first (${[...new Set(ids.map((id) => store.items.get(id)!.model))].join(', ')}); the rest only if they pass`,
    });
    this.feeder.restrictTo(ids);
    await this.drain();
    this.feeder.restrictTo(undefined);
    if (this.control.isStopping()) return false;
    const verdict = judgeCanary(store, ids, opts.maxFailures);
    if (verdict.passed) {
      saveCanary(store, { ids, passed: true });
      this.control.emit({
        kind: 'notice',
        message: `canary passed (${verdict.failed.length} of ${ids.length} failed, ${verdict.credits} credits): running the rest`,
      });
      return true;
    }
    const failures = verdict.failed
      .slice(0, 5)
      .map((f) => `${f.id} ${f.state}${f.code ? ` ${f.code}` : ''}${f.message ? `: ${f.message}` : ''}`);
    const unfinished = verdict.unfinished.length
      ? `; ${verdict.unfinished.length} did not finish (${verdict.unfinished.slice(0, 5).join(', ')})`
      : '';
    this.control.stop(
      'canary',
      `the canary failed: ${verdict.failed.length} of ${ids.length} items failed or were blocked (at most ${opts.maxFailures} allowed)${unfinished}. It cost ${verdict.credits} credits; nothing else was submitted.\n  ${failures.join('\n  ')}\nFix the manifest (or genbatch retry), then run the same command: the canary's items are judged again, and the rest run once they pass.`,
    );
    return false;
  }

  /**
   * Picks up where a killed run left off: resend, poll, download. What it
   * costs before the first submission is bounded by the in-flight work, not
   * by what already ran: downloads are queued from one query, and the done
   * items' outputs are checked on disk (re-downloaded when gone) alongside
   * the run, not before it.
   */
  private async recover(): Promise<void> {
    const { store, opts } = this;
    await removePartials(opts.outDir);
    for (const state of ['queued', 'submitting', 'maybe_accepted', 'running'] as const) {
      // A resend deferred to a later time is the feeder's to start when it is due.
      // An item the manifest dropped before its attempt was sent is never sent; one sent may be paid for, so it goes on.
      for (const item of store.items.inState(state)) {
        const lane = this.roster.laneOf(item);
        if (lane && item.not_before <= opts.now() && !(item.removed && state === 'queued')) this.startJob(item, lane);
      }
    }
    for (const { id, job_id, key_fp } of store.items.downloadsToResume()) {
      // A key this run lacks: the roster holds the item for a run with it, and says so.
      const lane = key_fp ? this.lanes.get(key_fp) : this.lanes.all[0];
      if (lane || this.roster.laneOf(store.items.get(id)!)) this.startDownload(id, job_id);
    }
    this.verifying = this.verifyDone().finally(() => {
      this.verifying = undefined;
      this.control.wake();
    });
  }

  /** Done items' outputs as they are on disk: one gone, or not what was paid for, is downloaded again from a fresh link (or reported when none can be had). */
  private async verifyDone(): Promise<void> {
    const { store, opts } = this;
    // Started once every output of the item is marked: a download started at its first missing one would not fetch the others.
    const again = new Map<string, string>();
    // Only the latest job's outputs are the item's: rows an older state kept of a replaced job are passed over.
    for (const out of store.items.doneOutputs()) {
      if (this.control.abort.signal.aborted) return;
      const check =
        out.path && out.bytes !== null && out.sha256
          ? await checkOutput(opts.outDir, {
              path: out.path,
              bytes: out.bytes,
              sha256: out.sha256,
              mtime_ms: out.mtime_ms,
            })
          : { verdict: 'missing' as const };
      if (check.verdict === 'same-bytes') store.outputs.stillVerified(out.job_id, out.idx, check.mtimeMs);
      else if (check.verdict !== 'unchanged') {
        opts.logger?.warn({ item: out.item_id, output: out.path, verdict: check.verdict }, 'output not as verified');
        // Back to downloading: one download fetches every output the item lacks.
        if (store.life.outputMissing(out.item_id, out.job_id, out.idx, opts.now())) again.set(out.item_id, out.job_id);
      }
    }
    for (const [itemId, jobId] of again) this.startDownload(itemId, jobId);
  }

  /** Keeps one type's slots full, on every key with room, with ready items in manifest order, until none can become ready. */
  private async feed(type: JobType): Promise<void> {
    const { control, feeder, gates, opts, lanes } = this;
    while (!control.isStopping()) {
      const free = lanes.withRoomFor(type);
      if (free.length === 0) {
        if (lanes.serving(type).length === 0) {
          this.roster.noKeyLeftFor(type);
          break;
        }
        // Every key's slots are taken: a task's end (or a key leaving, a stop) wakes this.
        await control.waitForEvent(this.clock.scaled(1000));
        continue;
      }
      if (this.reachability.isDown || this.pauseGate.isPaused) {
        // Nothing answers, or another shell paused the run: nothing new is started (an answer, or resume, wakes this).
        await control.waitForEvent(this.clock.scaled(1000));
        continue;
      }
      const first = lanes.all[0]!;
      const lookedAt = opts.now();
      // A due resend first: it is already counted as unanswered, and only its answer can let the breaker go on.
      let next: NextItem | undefined = feeder.nextResend(type, (fp) =>
        free.includes(lanes.get(fp ?? first.fingerprint)!),
      );
      if (!next) {
        const breaker = gates.breaker(feeder.unansweredCount);
        if (breaker === 'stop') break;
        if (breaker === 'wait') {
          if (feeder.answerableCount === 0 && feeder.nextDue(type) === undefined) {
            gates.breakerHeld(feeder.unansweredCount);
            break;
          }
          // An answered submission (jobAccepted) or a task's end wakes this.
          this.breakerWaits++;
          await control.waitForEvent(this.clock.scaled(1000));
          this.breakerWaits--;
          continue;
        }
        next = feeder.nextNew(type);
      }
      if (!next) {
        // No item of the type is left to run or to come back (items never change type): this loop is done, whatever the other type still does.
        // While a first sync is still writing items, more may come.
        if (!this.syncing && this.store.items.workByType()[type].open === 0) break;
        // Nothing ready: wait for a task or download to end, or for the next item that waits for its time (a backoff) to be due.
        // An item due by the time the feeder looked, yet not handed out, is held by a task or waits for its key's slot or a dependency: only an event changes that, never
        // the clock (waiting 1 ms at a time for it spun a core while a resend waited for its window). One that came due since is looked for again at once.
        const due = feeder.nextDue(type);
        const dueLater = due !== undefined && due > lookedAt;
        if (!dueLater && this.idle()) break;
        await control.waitForEvent(this.clock.scaled(1000), dueLater ? due - opts.now() : undefined);
        continue;
      }
      const price = this.price(next);
      if (price === undefined && opts.maxCredits !== undefined) {
        feeder.skipForGood(
          next.id,
          'PRICE_UNKNOWN',
          `no price is known for ${next.model} (the catalog shows none and nothing was charged for it yet), so the budget could not be kept: give one in the manifest (prices: { ${next.model}: credits }, or by resolution and duration for video) and run again`,
        );
        continue;
      }
      if (gates.overBudget(price ?? 0)) break;
      // A resend goes with its attempt's key; a new item with the key that has the most room.
      const lane =
        next.key_fp === undefined
          ? lanes.forNew(type, free, price ?? 0, opts.now())
          : lanes.get(next.key_fp ?? first.fingerprint)!;
      if (!lane) {
        // Every key with a free slot waits for its daily cap: a busy key's task end wakes this, and a new key day is a matter of time.
        await control.waitForWake(this.clock.scaled(1000));
        continue;
      }
      this.startJob(next, lane, price);
    }
  }

  downloadEnded(failure: DownloadFailure | undefined): void {
    const reason = this.downloadHealth.note(failure);
    if (reason)
      this.control.stop(
        'disk',
        `outputs cannot be saved: ${reason}. No new submissions; jobs already paid for were polled and recorded. Fix it (free space, permissions, or another --out) and run the same command again: it downloads what was paid for without paying again.`,
      );
  }

  private startJob(item: ItemRow, lane: KeyLane, price?: number): void {
    this.feeder.claim(item);
    // Counted against the key's cap from now: the feeder gives it no more than its cap can take.
    if (price) {
      const [cap, budget] = [lane.cap.assign(price), this.gates.assign(price)];
      this.assigned.set(item.id, () => {
        cap();
        budget();
      });
    }
    void lane.slots[item.type].start(() =>
      new JobTask(this, lane, item)
        .run()
        .catch((error: unknown) => this.crashed(item.id, error))
        .finally(() => {
          this.assigned.get(item.id)?.();
          this.assigned.delete(item.id);
          this.feeder.release(item.id);
          if (!lane.active) this.roster.settleForLeftKey(item.id, lane);
        }),
    );
  }

  startDownload(itemId: string, jobId: string, fresh?: Job): void {
    void this.downloads.add(() =>
      downloadJob(this, this.roster.laneOfJob(itemId), itemId, jobId, fresh)
        .catch((error: unknown) => this.crashed(itemId, error))
        .finally(() => {
          if (this.store.items.hasDependents(itemId)) this.wake();
        }),
    );
  }

  /**
   * A task threw what no policy foresaw. A paid job is not ended on a bug of
   * ours: the item keeps its state with the error noted, and the run goes on.
   * Called inside a .catch, so it must not throw itself.
   */
  private crashed(itemId: string, error: unknown): void {
    const message = `unexpected error: ${(error as Error)?.message ?? String(error)}`;
    try {
      this.opts.logger?.error({ item: itemId, err: error }, 'unexpected error');
      const item = this.store.items.get(itemId);
      if (item) this.store.life.crashed(itemId, item.state, { code: 'INTERNAL', message }, this.opts.now());
    } catch (secondary) {
      this.opts.logger?.error({ item: itemId, err: secondary }, 'could not record an unexpected error');
    }
  }

  /** A quiet run is fine while a known wait has its time: the daily cap, an outage's probe, the coordinator's return, a pause, a backoff, a first poll, a download, the first sync. */
  private quietExplained(): boolean {
    const now = this.opts.now();
    if (
      this.waitingUntil !== undefined ||
      this.reachability.isDown ||
      this.coordinatorDown ||
      this.pauseGate.isPaused ||
      this.breakerWaits > 0 ||
      this.syncing
    )
      return true;
    if (this.timedWaits > 0 || this.downloads.pending > 0) return true;
    return (['image', 'video'] as const).some((type) => (this.feeder.nextDue(type) ?? 0) > now);
  }

  /** Nothing moved for a while: what each state waits for is logged, the scheduler woken; a stall no wait explains is said as the bug it is. */
  private quiet(quietMs: number, stalled: boolean): void {
    const now = this.opts.now();
    const waiting = waitingFor(this.store, now, {
      running: true,
      waitingUntil: this.waitingUntil,
      unreachableSince: this.reachability.unreachableSince,
    });
    const held = this.feeder
      .heldIds()
      .slice(0, 20)
      .map((id) => {
        const item = this.store.items.get(id);
        return item ? { id, state: item.state, attempt: item.attempt, notBefore: item.not_before || null } : { id };
      });
    this.opts.logger?.[stalled ? 'warn' : 'info'](
      { quietMs, waiting, held },
      stalled ? 'stall: nothing moved and no known wait explains it' : 'quiet: waiting',
    );
    if (stalled) this.control.emit({ kind: 'stall', quietMs, waiting });
    this.control.wake();
  }

  timed<T>(wait: Promise<T>): Promise<T> {
    this.timedWaits++;
    return wait.finally(() => this.timedWaits--);
  }

  private idle(): boolean {
    return (
      !this.syncing &&
      !this.verifying &&
      this.lanes.idle() &&
      this.downloads.size === 0 &&
      this.downloads.pending === 0 &&
      this.feeder.held === 0
    );
  }

  /** A key started or stopped waiting for its daily cap: the run waits, and says so, when every key does. */
  private capWaitChanged(): void {
    const waits = this.lanes.active.map((l) => l.cap.waitingUntil);
    const until =
      waits.length > 0 && waits.every((w) => w !== undefined) ? Math.min(...(waits as number[])) : undefined;
    if (until === this.waitingUntil) return;
    this.waitingUntil = until;
    if (until === undefined) return;
    this.store.runs.beat(this.runId, this.opts.now(), until);
    this.control.emit({ kind: 'waiting', reason: 'the daily credit cap', untilMs: until });
  }

  private summary(): RunSummary {
    const stopped = this.control.stopReason;
    // With --only, the run is judged by what it was asked to do.
    const all = this.store.items.counts();
    const counts = this.store.items.selectedCounts() ?? all;
    const notSelected =
      Object.values(all).reduce((a, b) => a + b, 0) - Object.values(counts).reduce((a, b) => a + b, 0);
    // A drain says, at its end, what it left unsent.
    const notSent = counts.pending + counts.queued;
    const stop =
      stopped?.kind === 'drained'
        ? {
            ...stopped,
            message: `drained: the jobs in flight were finished and downloaded; ${notSent} item${notSent === 1 ? ' was' : 's were'} not sent${notSent ? ' (run the same command to send them)' : ''}`,
          }
        : stopped;
    return {
      counts,
      ...(this.opts.only ? { notSelected } : {}),
      credits: this.store.attempts.totals(),
      ...(stop ? { stop } : {}),
      changed: this.changed,
      failures: this.store.items.failuresByCode(),
      problems: this.store.items.problems().slice(0, 20),
      removed: this.store.items.removed(),
      ...this.roster.summary(),
    };
  }

  // What the tasks share (RunContext), handed on to the parts that own it.

  get storage(): import('../api/index.js').ApiClient {
    return this.lanes.all[0]!.client;
  }

  get abort(): AbortController {
    return this.control.abort;
  }

  get noNewWork(): AbortSignal {
    return this.control.noNewWork.signal;
  }

  spec(item: ItemRow): ItemSpec {
    return JSON.parse(item.spec) as ItemSpec;
  }

  /** The best bound known for one job: the catalog's or the manifest's price, else the largest charge seen for the model. */
  price(item: ItemRow): number | undefined {
    const spec = this.spec(item);
    return this.gates.bound(
      item.model,
      priceOf(spec, this.catalog?.get(spec.type, spec.model), this.manifest.manifest.prices).credits,
    );
  }

  noteCharge(model: string, credits: number): void {
    this.gates.noteCharge(model, credits);
  }

  jobAccepted(itemId: string): void {
    this.feeder.answered(itemId);
    if (this.breakerWaits > 0) this.control.wake();
  }

  noteBlocked(lane: KeyLane): void {
    lane.coordinator?.noteBlock(lane.fingerprint).catch(() => {});
  }

  keyRefused(lane: KeyLane, error: { code: string; message: string }, hint: string): void {
    this.roster.refused(lane, error, hint);
  }

  /**
   * The gate of the item's key; an attempt never sent may be handed over to
   * another key that has room rather than wait for this one's cap.
   */
  dailyCapGate(
    lane: KeyLane,
    item: ItemRow,
    price: number | undefined,
    mayHandOver: boolean,
  ): Promise<Release | 'hand-over' | undefined> {
    // From here its credits count as reserved, no longer as assigned.
    const assigned = this.assigned.get(item.id);
    assigned?.();
    this.assigned.delete(item.id);
    const handOver = (credits: number) =>
      this.lanes.serving(item.type).some((l) => l !== lane && !l.cap.isWaiting(this.opts.now(), credits));
    return this.gates.dailyCapGate(
      lane.cap,
      price,
      item.model,
      mayHandOver ? handOver : undefined,
      assigned !== undefined,
    );
  }

  isStopping(): boolean {
    return this.control.isStopping();
  }

  stop(kind: StopKind, message: string): void {
    this.control.stop(kind, message);
  }

  emit(event: RunEvent): void {
    this.control.emit(event);
  }

  wake(): void {
    this.control.wake();
  }

  scaled(ms: number): number {
    return this.clock.scaled(ms);
  }

  dayOf(at: number): number {
    return this.clock.dayOf(at);
  }
}

/** Temporary files of downloads a killed run left behind (never under a final name). */
async function removePartials(dir: string): Promise<void> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => []);
  for (const e of entries) {
    if (e.isFile() && /^\..+\.[0-9a-f]{8}\.part$/.test(e.name))
      await rm(join(e.parentPath ?? dir, e.name), { force: true });
  }
}

/**
 * Whether an id is chosen by `--only`: one of the ids, or matched by one of
 * the globs (`*` any run of characters, `?` one character).
 */
export function selects(selectors: readonly string[]): (id: string, tags: readonly string[]) => boolean {
  const tagged = new Set(selectors.filter((s) => s.startsWith('tag:')).map((s) => s.slice(4)));
  const ids = selectors.filter((s) => !s.startsWith('tag:'));
  const exact = new Set(ids.filter((s) => !/[*?]/.test(s)));
  const globs = ids
    .filter((s) => /[*?]/.test(s))
    .map(
      (s) =>
        new RegExp(
          `^${s
            .replace(/[.+^${}()|[\]\\]/g, '\\$&')
            .replace(/\*/g, '.*')
            .replace(/\?/g, '.')}$`,
          's',
        ),
    );
  return (id, tags) => exact.has(id) || globs.some((g) => g.test(id)) || tags.some((t) => tagged.has(t));
}
