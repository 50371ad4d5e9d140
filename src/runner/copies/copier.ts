import { createHash } from 'node:crypto';
import { buffer } from 'node:stream/consumers';
import PQueue from 'p-queue';
import { checkImage } from '../../copies/checks.js';
import { copiesOf, type MadeCopy } from '../../copies/web-copy.js';
import type { Logger } from '../../log/logger.js';
import { webCopyPath, type WebCopySpec, type CopyPlan, type OutputChecks } from '../../manifest/index.js';
import { writeWhole, type OutputSink } from '../../sink/index.js';
import type { Store, ToCopy } from '../../store/index.js';
import type { Control } from '../core/control.js';
import type { SavedOutput } from '../item/download-task.js';

/** Copies made at once: each is CPU work for libvips, beside the run's own. */
const AT_ONCE = 2;

/** A copy staged and recorded as waiting: the next stage publishes it. */
export interface StagedCopy {
  readonly itemId: string;
  readonly jobId: string;
  readonly idx: number;
  readonly path: string;
  readonly bytes: number;
  readonly sha256: string;
}

/** What the copier is given. */
export interface CopierDeps {
  readonly store: Store;
  readonly control: Control;
  readonly outputs: OutputSink;
  readonly now: () => number;
  readonly logger?: Logger | undefined;
  /** With a bucket: each copy staged, for the publishing stage. */
  readonly staged?: ((copy: StagedCopy) => void) | undefined;
}

/**
 * Makes the web copies of each image output once it is verified, off the
 * submission path, a few at a time: the third stage of the job's life (see
 * ../life.ts). Read the original (never written), make each missing copy,
 * write it through the sink beside the original, record it. With a bucket a
 * copy is an output: staged and recorded as waiting, then handed to the
 * publishing stage (`staged`). A copy
 * that fails, whatever the cause, is said and left for the next run (the run
 * counts it as owed and exits 4); the output and its item stay as they are.
 */
export class Copier {
  private readonly queue = new PQueue({ concurrency: AT_ONCE });

  constructor(private readonly deps: CopierDeps) {}

  /**
   * What an earlier run left unfinished (a kill between copies, a copy that
   * failed). A staged web copy found gone before it was published is made again.
   * Called before the publisher starts, which takes up the copies still waiting.
   */
  start(): void {
    const { publishing } = this.deps.outputs;
    if (publishing)
      for (const copy of this.deps.store.webCopies.unpublished())
        if (!publishing.isStaged(copy.path)) this.deps.store.webCopies.forget(copy);
    for (const row of this.deps.store.webCopies.toCopy()) {
      const plan = JSON.parse(row.finish) as CopyPlan;
      const unchecked = plan.checks !== undefined && !row.reviewed;
      if (row.made < plan.derivatives.length || unchecked) this.add(row, plan);
    }
  }

  /** An output just saved: its copies, if its item asks for any; resolves once they are made (or failed), if any. */
  saved(output: SavedOutput): Promise<void> | undefined {
    const { itemId, jobId, idx, path, version, item } = output;
    const { plan } = item;
    if (item.type !== 'image' || !plan) return undefined;
    const row = {
      item_id: itemId,
      job_id: jobId,
      idx,
      path,
      version,
      model: item.model,
      finish: '',
      made: 0,
      reviewed: 0,
    };
    return this.add(row, plan);
  }

  /** Copies being made or waiting (a known wait for the watchdog). */
  get busy(): boolean {
    return this.queue.size + this.queue.pending > 0;
  }

  onIdle(): Promise<void> {
    return this.queue.onIdle();
  }

  private add(row: ToCopy, plan: CopyPlan): Promise<void> {
    return this.queue.add(() => this.copyOne(row, plan));
  }

  /** One output's checks and copies: whatever fails (the bucket, the disk, the image) is said, never thrown. */
  private async copyOne(row: ToCopy, plan: CopyPlan): Promise<void> {
    const { store } = this.deps;
    if (this.deps.control.abort.signal.aborted) return;
    try {
      const have = new Set(store.webCopies.ofOutput(row.job_id, row.idx).map((d) => d.path));
      const missing = plan.derivatives.filter((d) => !have.has(webCopyPath(row.path, d)));
      const check = plan.checks && !row.reviewed ? plan.checks : undefined;
      if (missing.length === 0 && !check) return;
      const original = await this.original(row.path);
      if (!original) return this.failed(row, row.path, 'the original is not there to read');
      if (check) await this.check(row, original, check);
      const mark = plan.mark ? { model: row.model, jobId: row.job_id, itemId: row.item_id } : undefined;
      for await (const copy of copiesOf(original, missing, mark)) {
        if (this.deps.control.abort.signal.aborted) return;
        await this.write(row, copy);
      }
    } catch (error) {
      if (!this.deps.control.abort.signal.aborted) this.failed(row, row.path, (error as Error).message);
    }
  }

  /**
   * The original's bytes. Its staged file may go between the open and the
   * read (an earlier run's output published meanwhile): it is then read
   * where it went, from the bucket.
   */
  private async original(path: string): Promise<Buffer | undefined> {
    const { outputs } = this.deps;
    for (let tries = 0; ; tries++) {
      const file = await outputs.open(path);
      if (!file) return undefined;
      try {
        return await buffer(file.read());
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT' || tries > 0) throw error;
      }
    }
  }

  /**
   * A copy written beside its original, through the sink, then recorded: in
   * place in a folder; with a bucket, staged (durably: its record names its
   * bytes) and waiting to be published.
   */
  private async write(row: ToCopy, copy: MadeCopy & { spec: WebCopySpec }): Promise<void> {
    const { store, outputs, control, now } = this.deps;
    const startedAt = now();
    const path = webCopyPath(row.path, copy.spec);
    const staged = outputs.publishing !== undefined;
    // A copy is made again, the same, from the same original: one a killed run left there is replaced.
    await writeWhole(outputs, path, 'replace', copy.data, { durable: staged, output: staged });
    const sha256 = createHash('sha256').update(copy.data).digest('hex');
    const { format, width, height } = copy;
    const bytes = copy.data.length;
    store.webCopies.made({
      job_id: row.job_id,
      idx: row.idx,
      path,
      format,
      width,
      height,
      bytes,
      sha256,
      made_at: now(),
      published_at: staged ? null : now(),
    });
    const event = { itemId: row.item_id, jobId: row.job_id, output: row.idx };
    control.emit({ kind: 'copy-made', ...event, path, bytes, ms: now() - startedAt });
    if (staged) this.deps.staged?.({ itemId: row.item_id, jobId: row.job_id, idx: row.idx, path, bytes, sha256 });
  }

  /** A failed check rejects the output's version, as a reviewer would, with why; the output itself stays. */
  private async check(row: ToCopy, original: Buffer, checks: OutputChecks): Promise<void> {
    const { store, control, now } = this.deps;
    const reason = await checkImage(original, checks).catch((error: unknown) => {
      this.failed(row, row.path, `the checks could not read it: ${(error as Error).message}`);
      return undefined;
    });
    if (reason && store.decisions.rejectByCheck(row.item_id, row.version, reason, now()))
      control.emit({ kind: 'rejected-by-check', itemId: row.item_id, version: row.version, reason });
  }

  private failed(row: ToCopy, path: string, message: string): void {
    this.deps.logger?.warn({ item: row.item_id, output: row.path, copy: path, error: message }, 'copy not made');
    this.deps.control.emit({
      kind: 'copy-failed',
      itemId: row.item_id,
      jobId: row.job_id,
      output: row.idx,
      path,
      message,
    });
  }
}
