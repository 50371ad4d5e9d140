import { setMaxListeners } from 'node:events';
import { readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import PQueue from 'p-queue';
import type { ApiClient, Job } from '../api/index.js';
import type { Catalog } from '../api/catalog.js';
import { priceOf } from '../estimate/prices.js';
import type { LoadedManifest } from '../manifest/index.js';
import { Bucket } from '../scheduler/bucket.js';
import { KEY_DAY_MS, keyDayOf } from '../scheduler/limits.js';
import { Slots } from '../scheduler/slots.js';
import type { ItemRow, ItemState, Store } from '../store/index.js';
import { sleep } from '../util/clock.js';
import type { ItemSpec } from './bodies.js';
import { PollWait, type RunContext, type RunEvent, type RunOptions, type StopKind } from './context.js';
import { downloadJob } from './download-task.js';
import { JobTask } from './job-task.js';
import { syncItems } from './sync.js';

export interface RunSummary {
  exitCode: 0 | 1 | 3 | 130;
  counts: Record<ItemState, number>;
  credits: { charged: number; refunded: number };
  stop?: { kind: StopKind; message: string };
  /** Items whose content changed after they were submitted: kept, not resubmitted. */
  changed: string[];
  failures: Record<string, number>;
}

const HEARTBEAT_MS = 1_000;
const WEEK_MS = 7 * KEY_DAY_MS;
/** Ready items asked of SQLite at a time; more pages are read only while this run's own tasks hold them all. */
const READY_PAGE = 64;

/** Takes a validated manifest to verified outputs on disk, as fast as the key's limits allow. */
export class Runner implements RunContext {
  readonly abort = new AbortController();
  readonly uploadsInFlight = new Map<string, Promise<string>>();
  readonly buckets: RunContext['buckets'];
  readonly pollWait: PollWait;
  private readonly slots: Record<'image' | 'video', Slots>;
  private readonly downloads: PQueue;
  private readonly claimed = new Set<string>();
  /** Claimed items whose submission has no job yet: each may still come back blocked (422). */
  private readonly unanswered = new Set<string>();
  private readonly specs = new Map<string, ItemSpec>();
  private stopped?: { kind: StopKind; message: string };
  private wakeUp: () => void = () => {};
  private woken = new Promise<void>((r) => (this.wakeUp = r));
  private dailyPausedUntil = 0;
  private reserved = 0;
  /** Per model, the largest charge seen: the bound for items the catalog and manifest do not price. */
  private readonly largestCharge = new Map<string, number>();
  private readonly unpricedInFlight = new Set<string>();
  private readonly unpricedNoted = new Set<string>();
  /** Until when submissions wait for the daily cap, while they do. */
  private waitingUntil: number | undefined;
  private runId = 0;
  private changed: string[] = [];

  constructor(
    readonly client: ApiClient,
    readonly store: Store,
    readonly manifest: LoadedManifest,
    readonly opts: RunOptions,
    private readonly catalog: Catalog | undefined,
  ) {
    const now = opts.now;
    this.pollWait = new PollWait(opts.pollWaitSeconds);
    const recent = store.accounting.submissionsSince(now() - opts.limits.submit.windowMs);
    this.buckets = { submit: new Bucket(opts.limits.submit, now, recent), read: new Bucket(opts.limits.read, now), upload: new Bucket(opts.limits.upload, now) };
    this.slots = { image: new Slots(opts.limits.imagesInFlight), video: new Slots(opts.limits.videosInFlight) };
    this.downloads = new PQueue({ concurrency: opts.downloadConcurrency });
    // Every poll, upload and download in flight listens for the interrupt: more than the default 10 is normal.
    setMaxListeners(opts.limits.imagesInFlight + opts.limits.videosInFlight + opts.downloadConcurrency + 64, this.abort.signal);
  }

  async run(): Promise<RunSummary> {
    const { store, opts } = this;
    const runId = (this.runId = store.runs.begin(opts.now(), { limits: opts.limits, timeScale: opts.timeScale, outDir: opts.outDir }));
    // A heartbeat, so status can tell a live run from a killed one and when submissions resume.
    const heartbeat = setInterval(() => store.runs.beat(runId, opts.now(), this.waitingUntil), HEARTBEAT_MS);
    heartbeat.unref();
    try {
      return await this.work();
    } finally {
      clearInterval(heartbeat);
      store.runs.end(runId, opts.now());
    }
  }

  private async work(): Promise<RunSummary> {
    const { changed } = await syncItems(this.store, this.manifest, this.opts);
    this.changed = changed;
    for (const { model, credits } of this.store.attempts.largestChargeByModel()) this.largestCharge.set(model, credits);
    for (const item of this.manifest.items) {
      const { where: _where, ...spec } = item;
      this.specs.set(item.id, spec);
    }
    await this.recover();
    await Promise.all([this.feed('image'), this.feed('video')]);
    await Promise.all([this.slots.image.onIdle(), this.slots.video.onIdle()]);
    await this.downloads.onIdle();
    for (const bucket of Object.values(this.buckets)) bucket.stop();
    return this.summary();
  }

  /** Picks up where a killed run left off: resend, poll, download; re-download outputs deleted from disk. */
  private async recover(): Promise<void> {
    const { store, opts } = this;
    await removePartials(opts.outDir);
    for (const item of store.items.inState('done')) {
      // Only the latest job's outputs are the item's: rows an older state kept of a replaced job are passed over.
      const jobId = store.attempts.latest(item.id)?.job_id;
      for (const out of jobId ? store.outputs.ofJob(jobId) : []) {
        const missing = !out.path || (await stat(join(opts.outDir, out.path)).then((s) => s.size !== out.bytes, () => true));
        if (missing) store.life.outputMissing(item.id, out.job_id, out.idx, opts.now());
      }
    }
    for (const state of ['submitting', 'running'] as const) {
      for (const item of store.items.inState(state)) this.startJob(item);
    }
    for (const item of store.items.inState('downloading')) {
      const attempt = store.attempts.latest(item.id);
      if (attempt?.job_id) this.startDownload(item.id, attempt.job_id);
    }
  }

  private startJob(item: ItemRow): void {
    this.claimed.add(item.id);
    if (item.state === 'pending' || item.state === 'submitting') this.unanswered.add(item.id);
    void this.slots[item.type].start(() =>
      new JobTask(this, item.id)
        .run()
        .catch((error: unknown) => this.crashed(item.id, error))
        .finally(() => {
          this.claimed.delete(item.id);
          this.unanswered.delete(item.id);
        }),
    );
  }

  /**
   * A task threw what no policy foresaw. The item keeps its state (a paid job
   * is not ended on a bug of ours); the error is noted for status and the run
   * goes on. Called inside a .catch, so it must not throw itself.
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

  startDownload(itemId: string, jobId: string, fresh?: Job): void {
    void this.downloads.add(() => downloadJob(this, itemId, jobId, fresh).catch((error: unknown) => this.crashed(itemId, error)).finally(() => this.wake()));
  }

  /** Keeps one type's slots full with ready items, in manifest order, until none can become ready. */
  private async feed(type: 'image' | 'video'): Promise<void> {
    const slots = this.slots[type];
    while (!this.stopped) {
      await slots.nextFree();
      if (this.stopped) break;
      const breaker = this.breaker();
      if (breaker === 'stop') break;
      if (breaker === 'wait') {
        await this.waitForWake(this.scaled(1000));
        continue;
      }
      const next = this.pickReady(type);
      if (!next) {
        if (this.idle()) break;
        await this.waitForWake(this.scaled(1000));
        continue;
      }
      const price = this.price(next);
      if (price === undefined && this.opts.maxCredits !== undefined) {
        this.refuseUnpriced(next);
        continue;
      }
      if (this.overBudget(price ?? 0)) break;
      this.startJob(next);
    }
  }

  /**
   * The first ready item of a type (pending, due, every dependency done), in
   * manifest order, that no task of this run holds. Dependents of items that
   * ended without an output are skipped first.
   */
  private pickReady(type: 'image' | 'video'): ItemRow | undefined {
    const { store, opts } = this;
    // Until none is left: a skipped item dooms its own dependents in turn.
    for (let doomed = store.items.doomed(); doomed.length > 0; doomed = store.items.doomed()) {
      const seen = new Set<string>();
      for (const { id, dep_id, dep_state } of doomed) {
        if (seen.has(id)) continue;
        seen.add(id);
        const message = `${dep_id} ended ${dep_state}`;
        if (!store.life.skip(id, { code: 'DEPENDENCY_FAILED', message }, opts.now())) continue;
        this.emit({ kind: 'item-final', itemId: id, state: 'skipped', code: 'DEPENDENCY_FAILED', message });
      }
    }
    for (let after = -1; ; ) {
      const page = store.items.ready(type, opts.now(), after, READY_PAGE);
      const free = page.find((row) => !this.claimed.has(row.id));
      if (free || page.length < READY_PAGE) return free;
      after = page.at(-1)!.seq;
    }
  }

  private idle(): boolean {
    return this.slots.image.busy === 0 && this.slots.video.busy === 0 && this.downloads.size === 0 && this.downloads.pending === 0 && this.claimed.size === 0;
  }

  private overBudget(price: number): boolean {
    const max = this.opts.maxCredits;
    if (max === undefined) return false;
    const { charged, refunded } = this.store.attempts.totals();
    if (charged - refunded + this.reserved + price <= max) return false;
    this.stop('budget', `the run's budget of ${max} credits is reached (${charged - refunded} charged net of refunds). Raise --max-credits or budget.maxCredits and run again to go on.`);
    return true;
  }

  /**
   * The moderation circuit breaker. Submissions not yet answered count as
   * possibly blocked, so blocked plus unanswered never passes --max-blocked
   * (at most 29): the key's count cannot reach the service's threshold of 30.
   */
  private breaker(): 'go' | 'wait' | 'stop' {
    const blocked = this.store.accounting.blockedSince(this.opts.now() - this.scaled(WEEK_MS));
    if (blocked + this.unanswered.size < this.opts.maxBlocked) return 'go';
    if (blocked < this.opts.maxBlocked) return 'wait';
    this.stop('moderation', `${blocked} submissions were blocked by moderation in the last 7 days; stopping before the service's threshold of 30 costs the key its eligibility. Review the blocked prompts (genbatch status).`);
    return 'stop';
  }

  /** The item's submission was answered with a job: it can no longer be blocked. */
  jobAccepted(itemId: string): void {
    this.unanswered.delete(itemId);
  }

  /**
   * Waits while the key day's cap (or a DAILY_CAP_REACHED pause) forbids this
   * submission; reserves its credits until the caller releases them after the
   * answer, so concurrent submissions cannot overshoot the cap or the budget together.
   */
  async dailyCapGate(price: number | undefined, model: string): Promise<(() => void) | undefined> {
    const credits = price ?? 0;
    for (;;) {
      if (this.stopped || this.overBudget(credits)) return undefined;
      // Nothing bounds this model's price yet: one submission of it at a time, until a charge shows the price.
      if (price === undefined && this.unpricedInFlight.has(model)) {
        await this.waitForWake(this.scaled(1000));
        const seen = this.largestCharge.get(model);
        if (seen !== undefined) return this.dailyCapGate(seen, model);
        continue;
      }
      const now = this.opts.now();
      const day = this.dayOf(now);
      const over = this.store.accounting.chargedOn(day) + this.reserved + credits > this.opts.limits.dailyCap;
      const until = Math.max(this.dailyPausedUntil, over ? (day + 1) * this.scaled(KEY_DAY_MS) : 0);
      if (until <= now) {
        this.waitingUntil = undefined;
        this.reserved += credits;
        if (price === undefined) {
          this.unpricedInFlight.add(model);
          if (!this.unpricedNoted.has(model)) {
            this.unpricedNoted.add(model);
            this.emit({ kind: 'notice', message: `no price is known for ${model}: its first job is sent alone and the daily cap counts it once the service reports its charge (give prices: in the manifest to reserve ahead)` });
          }
        }
        let released = false;
        return () => {
          if (released) return;
          released = true;
          this.reserved -= credits;
          if (price === undefined && this.unpricedInFlight.delete(model)) this.wake();
        };
      }
      if (this.waitingUntil !== until) this.store.runs.beat(this.runId, now, until);
      this.waitingUntil = until;
      this.emit({ kind: 'waiting', reason: 'the daily credit cap', untilMs: until });
      await this.waitForWake(Math.min(until - now, this.scaled(60_000)));
    }
  }

  /** A budget cannot be kept for an item whose price nothing bounds: it is not started, and the user is told how to price it. */
  private refuseUnpriced(item: ItemRow): void {
    const message = `no price is known for ${item.model} (the catalog shows none and nothing was charged for it yet), so the budget could not be kept: give one in the manifest (prices: { ${item.model}: credits }, or by resolution and duration for video) and run again`;
    if (!this.store.life.skip(item.id, { code: 'PRICE_UNKNOWN', message }, this.opts.now())) return;
    this.emit({ kind: 'item-final', itemId: item.id, state: 'skipped', code: 'PRICE_UNKNOWN', message });
  }

  pauseSubmissionsFor(ms: number): void {
    this.dailyPausedUntil = Math.max(this.dailyPausedUntil, this.opts.now() + ms);
  }

  spec(item: ItemRow): ItemSpec {
    return this.specs.get(item.id) ?? (JSON.parse(item.spec) as ItemSpec);
  }

  price(item: ItemRow): number | undefined {
    const spec = this.spec(item);
    return priceOf(spec, this.catalog?.get(spec.type, spec.model), this.manifest.manifest.prices).credits ?? this.largestCharge.get(item.model);
  }

  noteCharge(model: string, credits: number): void {
    if (credits > (this.largestCharge.get(model) ?? -1)) this.largestCharge.set(model, credits);
  }

  isStopping(): boolean {
    return this.stopped !== undefined;
  }

  stop(kind: StopKind, message: string): void {
    if (this.stopped) return;
    this.stopped = { kind, message };
    this.emit({ kind: 'stopping', reason: message });
    if (kind === 'interrupted' || kind === 'refused' || kind === 'disk') this.abort.abort(new Error(message));
    this.wake();
  }

  emit(event: RunEvent): void {
    this.opts.logger?.info(event, event.kind);
    this.opts.onEvent?.(event);
  }

  wake(): void {
    const wake = this.wakeUp;
    this.woken = new Promise<void>((r) => (this.wakeUp = r));
    wake();
  }

  private async waitForWake(ms: number): Promise<void> {
    await Promise.race([this.woken, sleep(Math.max(1, ms))]);
  }

  scaled(ms: number): number {
    return ms / this.opts.timeScale;
  }

  dayOf(at: number): number {
    return keyDayOf(at, this.opts.timeScale);
  }

  private summary(): RunSummary {
    const counts = this.store.items.counts();
    const failures = this.store.items.failuresByCode();
    const open = counts.pending + counts.submitting + counts.running + counts.downloading;
    const allDone = counts.done === Object.values(counts).reduce((a, b) => a + b, 0);
    const exitCode = this.stopped?.kind === 'interrupted' ? 130 : this.stopped && this.stopped.kind !== 'disk' && open > 0 ? 3 : allDone ? 0 : 1;
    return { exitCode, counts, credits: this.store.attempts.totals(), ...(this.stopped ? { stop: this.stopped } : {}), changed: this.changed, failures };
  }
}

/** Temporary files of downloads a killed run left behind (never under a final name). */
async function removePartials(dir: string): Promise<void> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => []);
  for (const e of entries) {
    if (e.isFile() && /^\..+\.[0-9a-f]{8}\.part$/.test(e.name)) await rm(join(e.parentPath ?? dir, e.name), { force: true });
  }
}
