import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import PQueue from 'p-queue';
import type { ApiClient, Job } from '../api/index.js';
import type { Catalog } from '../api/catalog.js';
import { priceOf } from '../estimate/prices.js';
import type { ManifestTop, ResolvedItem } from '../manifest/index.js';
import { Bucket } from '../scheduler/bucket.js';
import { Slots } from '../scheduler/slots.js';
import type { ItemProblem, ItemRow, ItemState, Store } from '../store/index.js';
import type { ItemSpec } from './bodies.js';
import { RunClock } from './clock.js';
import { PollWait, type DownloadFailure, type RunContext, type RunEvent, type RunOptions, type StopKind } from './context.js';
import { Control } from './control.js';
import { claimOutputDir, probeOutputDir } from '../download/output-dir.js';
import { checkOutput } from '../download/verify.js';
import { DownloadHealth } from './download-health.js';
import { downloadJob } from './download-task.js';
import { canaryRecord, chooseCanary, judgeCanary, saveCanary } from './canary.js';
import { Feeder } from './feeder.js';
import { Gates } from './gates.js';
import { JobTask } from './job-task.js';
import { syncItems } from './sync.js';

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
  /** Items whose attempt was sent with a key this run lacks (by fingerprint): they wait for a run with it. */
  keysMissing: Record<string, number>;
}

const HEARTBEAT_MS = 1_000;

/**
 * Takes a validated manifest to verified outputs on disk, as fast as the key's
 * limits allow: the composition of the run's clock, control, gates, feeder,
 * buckets and slots. Each item's own life is a JobTask, then a download.
 */
export class Runner implements RunContext {
  readonly uploadsInFlight = new Map<string, Promise<string>>();
  readonly uploadFailures = new Map<string, number>();
  readonly buckets: RunContext['buckets'];
  readonly pollWait: PollWait;
  private readonly clock: RunClock;
  private readonly control: Control;
  private readonly gates: Gates;
  private readonly feeder: Feeder;
  private readonly slots: Record<'image' | 'video', Slots>;
  private readonly downloads: PQueue;
  private readonly downloadHealth = new DownloadHealth();
  private runId = 0;
  private changed: string[] = [];
  /** Fingerprints of keys this run lacks → the items that wait for each. */
  private readonly keysMissing = new Map<string, Set<string>>();

  constructor(
    readonly client: ApiClient,
    readonly store: Store,
    readonly manifest: ManifestTop,
    readonly opts: RunOptions,
    private readonly catalog: Catalog | undefined,
    /** The manifest's items to write into the state first; none when the state holds them as they are (a resume). */
    private toSync?: { items: readonly ResolvedItem[]; fingerprint?: string | undefined },
  ) {
    const { limits, now } = opts;
    this.clock = new RunClock(now, opts.timeScale);
    // Every poll, upload and download in flight listens for the interrupt: one per slot and download, plus the queues'.
    this.control = new Control(opts.logger, opts.onEvent, limits.imagesInFlight + limits.videosInFlight + opts.downloadConcurrency + 64);
    this.gates = new Gates(store, { dailyCap: limits.dailyCap, maxCredits: opts.maxCredits, maxBlocked: opts.maxBlocked }, this.clock, this.control, (until) => store.runs.beat(this.runId, now(), until));
    this.feeder = new Feeder(store, this.clock, this.control);
    this.pollWait = new PollWait(opts.pollWaitSeconds);
    const recent = store.accounting.submissionsSince(now() - limits.submit.windowMs);
    this.buckets = { submit: new Bucket(limits.submit, now, recent), read: new Bucket(limits.read, now), upload: new Bucket(limits.upload, now) };
    client.observeRemaining((kind, remaining) => this.buckets[kind].serviceRemaining(remaining));
    this.slots = { image: new Slots(limits.imagesInFlight), video: new Slots(limits.videosInFlight) };
    this.downloads = new PQueue({ concurrency: opts.downloadConcurrency });
    // A task's own last act cannot wake the feeder: its queue still counts it busy. Woken once the queue has let it go, the run ends at once.
    const wake = () => this.control.wake();
    this.slots.image.onTaskEnd(wake);
    this.slots.video.onTaskEnd(wake);
    this.downloads.on('next', wake);
  }

  async run(): Promise<RunSummary> {
    const { store, opts } = this;
    const runId = (this.runId = store.runs.begin(opts.now(), { limits: opts.limits, timeScale: opts.timeScale, outDir: opts.outDir }));
    // A heartbeat, so status can tell a live run from a killed one and when submissions resume.
    const heartbeat = setInterval(() => store.runs.beat(runId, opts.now(), this.gates.waitingUntil), HEARTBEAT_MS);
    heartbeat.unref();
    try {
      return await this.work();
    } finally {
      clearInterval(heartbeat);
      store.runs.end(runId, opts.now());
    }
  }

  private async work(): Promise<RunSummary> {
    if (this.toSync) {
      await syncItems(this.store, this.manifest, this.toSync.items, this.opts, this.toSync.fingerprint);
      // From here on the state has them: 100,000 item objects need not stay in memory for the whole run.
      this.toSync = undefined;
    }
    this.changed = this.store.items.changedIds();
    // Before anything is paid for: a dir that cannot take outputs stops the run here.
    const unwritable = await probeOutputDir(this.opts.outDir);
    if (unwritable) {
      this.control.stop('disk', `${unwritable.message}. Nothing was submitted. Fix it (or pass --out DIR) and run the same command again: what was already paid for is downloaded then, without paying again.`);
      return this.summary();
    }
    await claimOutputDir(this.opts.outDir, { state: this.store.db.name, runId: this.store.meta('run_id')!, rehearsal: this.opts.rehearsal ?? false });
    await this.recover();
    if (this.opts.canary && !(await this.canary(this.opts.canary))) {
      for (const bucket of Object.values(this.buckets)) bucket.stop();
      return this.summary();
    }
    await this.drain();
    for (const bucket of Object.values(this.buckets)) bucket.stop();
    return this.summary();
  }

  /** Feeds both types until nothing can become ready, then waits for every task and download. */
  private async drain(): Promise<void> {
    await Promise.all([this.feed('image'), this.feed('video')]);
    await Promise.all([this.slots.image.onIdle(), this.slots.video.onIdle()]);
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
    this.control.emit({ kind: 'notice', message: `canary: ${ids.length} item${ids.length === 1 ? '' : 's'} first (${[...new Set(ids.map((id) => store.items.get(id)!.model))].join(', ')}); the rest only if they pass` });
    this.feeder.restrictTo(ids);
    await this.drain();
    this.feeder.restrictTo(undefined);
    if (this.control.isStopping()) return false;
    const verdict = judgeCanary(store, ids, opts.maxFailures);
    if (verdict.passed) {
      saveCanary(store, { ids, passed: true });
      this.control.emit({ kind: 'notice', message: `canary passed (${verdict.failed.length} of ${ids.length} failed, ${verdict.credits} credits): running the rest` });
      return true;
    }
    const failures = verdict.failed.slice(0, 5).map((f) => `${f.id} ${f.state}${f.code ? ` ${f.code}` : ''}${f.message ? `: ${f.message}` : ''}`);
    const unfinished = verdict.unfinished.length ? `; ${verdict.unfinished.length} did not finish (${verdict.unfinished.slice(0, 5).join(', ')})` : '';
    this.control.stop(
      'canary',
      `the canary failed: ${verdict.failed.length} of ${ids.length} items failed or were blocked (at most ${opts.maxFailures} allowed)${unfinished}. It cost ${verdict.credits} credits; nothing else was submitted.\n  ${failures.join('\n  ')}\nFix the manifest (or genbatch retry), then run the same command: the canary's items are judged again, and the rest run once they pass.`,
    );
    return false;
  }

  /** Picks up where a killed run left off: resend, poll, download; re-download outputs gone from disk. */
  private async recover(): Promise<void> {
    const { store, opts } = this;
    await removePartials(opts.outDir);
    for (const item of store.items.inState('done')) {
      // Only the latest job's outputs are the item's: rows an older state kept of a replaced job are passed over.
      const jobId = store.attempts.latest(item.id)?.job_id;
      for (const out of jobId ? store.outputs.ofJob(jobId) : []) {
        const check = out.path && out.bytes !== null && out.sha256 ? await checkOutput(opts.outDir, { path: out.path, bytes: out.bytes, sha256: out.sha256, mtime_ms: out.mtime_ms }) : { verdict: 'missing' as const };
        if (check.verdict === 'same-bytes') store.outputs.stillVerified(out.job_id, out.idx, check.mtimeMs);
        else if (check.verdict !== 'unchanged') {
          // Gone or not what was paid for: downloaded again from a fresh link (or reported when none can be had).
          opts.logger?.warn({ item: item.id, output: out.path, verdict: check.verdict }, 'output not as verified');
          store.life.outputMissing(item.id, out.job_id, out.idx, opts.now());
        }
      }
    }
    for (const state of ['queued', 'submitting', 'maybe_accepted', 'running'] as const) {
      // A resend deferred to a later time is the feeder's to start when it is due.
      // An item the manifest dropped before its attempt was sent is never sent; one sent may be paid for, so it goes on.
      for (const item of store.items.inState(state)) {
        if (state !== 'queued' && this.heldForKey(item)) continue;
        if (item.not_before <= opts.now() && !(item.removed && state === 'queued')) this.startJob(item);
      }
    }
    for (const item of store.items.inState('downloading')) {
      if (this.heldForKey(item)) continue;
      const attempt = store.attempts.latest(item.id);
      if (attempt?.job_id) this.startDownload(item.id, attempt.job_id);
    }
  }

  /**
   * An attempt sent with a key this run lacks is left for a run with that key:
   * resent with another it could be charged again, and another key cannot read its job.
   */
  private heldForKey(item: ItemRow): boolean {
    const { store, opts } = this;
    const attempt = store.attempts.latest(item.id);
    if (!attempt?.key_fp || attempt.key_fp === opts.keyFingerprint) return false;
    const message = `sent with the API key whose fingerprint is ${attempt.key_fp}, which this run does not have: it is neither resent nor read with another key (that could pay twice). Run again with that key in GENBATCH_API_KEY`;
    store.life.heldForKey(item.id, attempt.n, item.state, { code: 'KEY_MISSING', message }, opts.now());
    // A submitting item held here is maybe_accepted when recover reaches that state: counted once.
    const waiting = this.keysMissing.get(attempt.key_fp) ?? new Set<string>();
    this.keysMissing.set(attempt.key_fp, waiting.add(item.id));
    return true;
  }

  /** Keeps one type's slots full with ready items, in manifest order, until none can become ready. */
  private async feed(type: 'image' | 'video'): Promise<void> {
    const { control, feeder, gates, opts } = this;
    const slots = this.slots[type];
    while (!control.isStopping()) {
      await slots.nextFree();
      if (control.isStopping()) break;
      const breaker = gates.breaker(feeder.unansweredCount);
      if (breaker === 'stop') break;
      const next = breaker === 'go' ? feeder.next(type) : undefined;
      if (!next) {
        // Nothing ready: wait for a task to end, or for the next item that waits for its time (a backoff) to be due.
        const due = feeder.nextDue(type);
        if (breaker === 'go' && due === undefined && this.idle()) break;
        await control.waitForWake(Math.max(1, Math.min(this.clock.scaled(1000), due === undefined ? Infinity : due - opts.now())));
        continue;
      }
      const price = this.price(next);
      if (price === undefined && opts.maxCredits !== undefined) {
        feeder.skipForGood(next.id, 'PRICE_UNKNOWN', `no price is known for ${next.model} (the catalog shows none and nothing was charged for it yet), so the budget could not be kept: give one in the manifest (prices: { ${next.model}: credits }, or by resolution and duration for video) and run again`);
        continue;
      }
      if (gates.overBudget(price ?? 0)) break;
      this.startJob(next);
    }
  }

  downloadEnded(failure: DownloadFailure | undefined): void {
    const reason = this.downloadHealth.note(failure);
    if (reason) this.control.stop('disk', `outputs cannot be saved: ${reason}. No new submissions; jobs already paid for were polled and recorded. Fix it (free space, permissions, or another --out) and run the same command again: it downloads what was paid for without paying again.`);
  }

  private startJob(item: ItemRow): void {
    this.feeder.claim(item);
    void this.slots[item.type].start(() =>
      new JobTask(this, item.id)
        .run()
        .catch((error: unknown) => this.crashed(item.id, error))
        .finally(() => this.feeder.release(item.id)),
    );
  }

  startDownload(itemId: string, jobId: string, fresh?: Job): void {
    void this.downloads.add(() => downloadJob(this, itemId, jobId, fresh).catch((error: unknown) => this.crashed(itemId, error)).finally(() => this.wake()));
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

  private idle(): boolean {
    return this.slots.image.busy === 0 && this.slots.video.busy === 0 && this.downloads.size === 0 && this.downloads.pending === 0 && this.feeder.held === 0;
  }

  private summary(): RunSummary {
    const stop = this.control.stopReason;
    return { counts: this.store.items.counts(), credits: this.store.attempts.totals(), ...(stop ? { stop } : {}), changed: this.changed, failures: this.store.items.failuresByCode(), problems: this.store.items.problems().slice(0, 20), removed: this.store.items.removed(), keysMissing: Object.fromEntries([...this.keysMissing].map(([fp, ids]) => [fp, ids.size])) };
  }

  // What the tasks share (RunContext), handed on to the parts that own it.

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
    return this.gates.bound(item.model, priceOf(spec, this.catalog?.get(spec.type, spec.model), this.manifest.manifest.prices).credits);
  }

  noteCharge(model: string, credits: number): void {
    this.gates.noteCharge(model, credits);
  }

  jobAccepted(itemId: string): void {
    this.feeder.answered(itemId);
  }

  dailyCapGate(price: number | undefined, model: string): Promise<(() => void) | undefined> {
    return this.gates.dailyCapGate(price, model);
  }

  pauseSubmissionsFor(ms: number): void {
    this.gates.pauseSubmissionsFor(ms);
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
    if (e.isFile() && /^\..+\.[0-9a-f]{8}\.part$/.test(e.name)) await rm(join(e.parentPath ?? dir, e.name), { force: true });
  }
}
