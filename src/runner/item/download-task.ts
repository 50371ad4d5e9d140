import { policy, waitMs, type ApiClient, type Job, type Reaction } from '../../api/index.js';
import { DownloadError, openOutput, type DownloadedFile } from '../../download/download.js';
import type { TransferProgress } from '../../scheduler/transfers.js';
import type { OutputSink } from '../../sink/index.js';
import type { Logger } from '../../log/logger.js';
import { outputRelativePath, type CopyPlan } from '../../manifest/index.js';
import type { DownloadingItem, ErrorNote, Store } from '../../store/index.js';
import { sleep } from '../../util/sleep.js';
import type { RunClock } from '../../scheduler/clock.js';
import type { Control, DownloadFailure } from '../core/control.js';
import type { KeyLane } from '../keys/lanes.js';
import type { Reachability } from '../watch/reachability.js';

const MAX_LINK_REFRESHES = 5;

/** What a download uses of the run: built once by the run, shared by every download. */
export interface DownloadDeps {
  readonly store: Store;
  readonly clock: RunClock;
  /** Its abort ends downloads (an interrupt); a refused account stops the run. */
  readonly control: Control;
  readonly reachability: Reachability;
  /** Reads presigned output links: they carry no key, so any key's client will do. */
  readonly storage: ApiClient;
  /** The manifest's output name template and vars. */
  readonly naming: { readonly outputName: string; readonly vars: ReadonlyMap<string, string> };
  readonly settings: {
    readonly outputs: OutputSink;
    readonly maxOutputBytes?: number | undefined;
    /** A transfer that moves no byte for this long is abandoned and tried again from a fresh link. */
    readonly idleTimeoutMs: number;
    readonly logger?: Logger | undefined;
  };
  readonly report: {
    /** The service refused the key that owns the job (it leaves the run) or the account (the run stops). */
    refused(lane: KeyLane, error: ErrorNote, reaction: Extract<Reaction, { do: 'stop-run' }>): void;
    /** The download succeeded (undefined) or gave up: a full disk, or the same failure again and again, stops the run. */
    ended(failure: DownloadFailure | undefined): void;
  };
}

/** An output a download saved and verified: the stage's product, handed to the next as a value. */
export interface SavedOutput extends DownloadedFile {
  readonly itemId: string;
  readonly jobId: string;
  readonly idx: number;
  /** The item's version this output belongs to. */
  readonly version: number;
  /** What the later stages need of its item, read once by the download. */
  readonly item: SavedItem;
}

/** An output's item as the stages after the download take it: its type, model and copy plan (parsed once). */
export interface SavedItem {
  readonly type: 'image' | 'video';
  readonly model: string;
  /** Its web copies, their marking and its checks; undefined when it asks for none. */
  readonly plan: CopyPlan | undefined;
}

/** The item as the stages after the download take it, its copy plan read once, when its first output is saved. */
function savedItemOf(item: DownloadingItem, store: Store): SavedItem {
  const spec = store.items.specOf(item.id);
  // The plan is stored under `finish` in the item's spec (the name it was first written under).
  const plan = spec ? (JSON.parse(spec) as { finish?: CopyPlan }).finish : undefined;
  return { type: item.type, model: item.model, plan };
}

/**
 * Downloads a completed job's outputs, each verified and recorded (the last
 * one makes the item done): the second stage of the job's life (see
 * ../life.ts). Resolves to the outputs saved now, as values for
 * the stages after. A failing or expired link is refreshed by a new GET of
 * the job; a download that cannot finish leaves the item `downloading` for
 * the next resume, and never leads to a resubmission. Links are refreshed
 * with the key of the job's attempt (`lane`); without it (the key left the
 * run) only the links at hand are tried.
 */
export function downloadJob(
  deps: DownloadDeps,
  lane: KeyLane | undefined,
  item: DownloadingItem,
  jobId: string,
  progress: TransferProgress,
  fresh?: Job,
): Promise<SavedOutput[]> {
  return new DownloadTask(deps, lane, item, jobId, progress).run(fresh);
}

/** Why the latest try failed. */
interface LastError {
  message: string;
  code: string;
}

class DownloadTask {
  private last: LastError = { message: '', code: 'DOWNLOAD_FAILED' };
  /** The outputs saved by this download. */
  private readonly saved: SavedOutput[] = [];
  private savedItem: SavedItem | undefined;

  constructor(
    private readonly deps: DownloadDeps,
    private readonly lane: KeyLane | undefined,
    private readonly item: DownloadingItem,
    private readonly jobId: string,
    /** Tells the download queue each byte moved: a silent transfer gives its place to the next. */
    private readonly progress: TransferProgress,
  ) {}

  private get signal(): AbortSignal {
    return this.deps.control.abort.signal;
  }

  async run(fresh: Job | undefined): Promise<SavedOutput[]> {
    let job = fresh;
    for (let refresh = 0; refresh <= MAX_LINK_REFRESHES; refresh++) {
      if (this.signal.aborted) return this.saved;
      if (!job) {
        const got = await this.fetchJob(refresh);
        if (got === 'stop') return this.saved;
        if (got === 'give-up') break;
        // An outage is waited out: it costs the download none of its refreshes.
        if (got === 'outage') refresh--;
        if (typeof got !== 'object') continue;
        job = got;
      }
      const saved = await this.saveMissing(job);
      if (saved !== 'refresh') return this.saved;
      job = undefined; // fetch fresh links
    }
    const message = this.last.message || 'the job lists no outputs';
    this.gaveUp({ code: this.last.code, message, disk: false, itemOnly: false });
    return this.saved;
  }

  /** The item waits, downloading, for a later run; the run hears why (the disk, or the same failure again, stops it). */
  private gaveUp(failure: DownloadFailure): void {
    const { store, clock, control } = this.deps;
    const { message } = failure;
    store.lifecycle.downloadFailed(this.item.id, { code: 'DOWNLOAD_FAILED', message }, clock.now());
    control.emit({ kind: 'item-final', itemId: this.item.id, state: 'downloading', code: 'DOWNLOAD_FAILED', message });
    this.deps.report.ended(failure);
  }

  /** The job with fresh links, or what to do instead: stop (the run stops), give up (for a later run), try again. */
  private async fetchJob(refresh: number): Promise<Job | 'stop' | 'give-up' | 'outage' | 'again'> {
    const { lane, deps } = this;
    if (!lane?.active) {
      this.last.message ||=
        'the key that owns the job is not in this run (or was refused), so its links cannot be refreshed';
      this.last.code = 'KEY_REFUSED';
      return 'give-up';
    }
    let sentAt = deps.clock.now();
    try {
      if (!(await deps.reachability.ready(this.signal))) return 'stop';
      return await lane.windows.read.run(() => {
        sentAt = deps.clock.now();
        return lane.client.getJob(this.jobId, 0, this.signal);
      }, this.signal);
    } catch (error) {
      if (this.signal.aborted) return 'stop';
      const noAnswer = await deps.reachability.noAnswer(sentAt, error, this.signal);
      if (noAnswer === 'stopped') return 'stop';
      if (noAnswer === 'outage') return 'outage';
      return this.refused(lane, error, refresh);
    }
  }

  /** A read of the job was refused: what policy says of it, applied. */
  private async refused(lane: KeyLane, error: unknown, refresh: number): Promise<'give-up' | 'again'> {
    const { deps } = this;
    const reaction = policy('read-job', error);
    this.last = { message: (error as Error).message, code: (error as { code?: string }).code ?? this.last.code };
    if (reaction.do === 'stop-run') {
      deps.report.refused(lane, this.last, reaction);
      return 'give-up';
    }
    // A refusal of this job's read: its links cannot be had now; the item waits for a later run.
    if (reaction.do === 'keep-job') return 'give-up';
    const read = lane.limits.read;
    const wait = waitMs(reaction, refresh, error, deps.clock.scaled, read);
    if (reaction.do === 'wait-and-resend') lane.windows.read.pauseFor(wait);
    else await sleep(wait);
    return 'again';
  }

  /** Saves the outputs not yet on disk: 'ended' (saved, or failed for good), or 'refresh' for fresh links. */
  private async saveMissing(job: Job): Promise<'ended' | 'refresh'> {
    const { store, clock, control } = this.deps;
    const itemId = this.item.id;
    const have = new Map(store.outputFiles.ofJob(this.jobId).map((o) => [o.idx, o]));
    const missing = [...job.outputs.entries()].filter(([i]) => !have.get(i + 1)?.sha256);
    if (job.outputs.length === 0) return 'refresh';
    for (const [k, [i, output]] of missing.entries()) {
      const saved = await this.saveOne(i + 1, output.downloadUrl, k === missing.length - 1);
      if (saved !== 'saved') return saved;
    }
    // Every output was already on disk (a resumed download that had saved them all).
    if (missing.length === 0) {
      if (store.lifecycle.downloaded(itemId, clock.now())) control.emit({ kind: 'item-final', itemId, state: 'done' });
      this.deps.report.ended(undefined);
    }
    return 'ended';
  }

  /** One output, downloaded and verified; the last one moves the item to done in the same commit. */
  private async saveOne(idx: number, url: string, last: boolean): Promise<'saved' | 'ended' | 'refresh'> {
    const { store, clock, control, settings } = this.deps;
    const itemId = this.item.id;
    const startedAt = clock.now();
    try {
      const opened = await openOutput(this.deps.storage, url, this.item.type, {
        signal: this.signal,
        maxBytes: settings.maxOutputBytes,
        idleTimeoutMs: settings.idleTimeoutMs,
        progress: this.progress,
      });
      // Named once its media type is known (its extension), before a byte of its body is read.
      let claimed: ReturnType<typeof this.claimName>;
      try {
        claimed = this.claimName(idx, opened.ext);
      } catch (error) {
        opened.cancel();
        throw error;
      }
      const file = await opened.saveAs(settings.outputs, claimed);
      const { version } = claimed;
      const { jobId } = this;
      const done = store.lifecycle.outputSaved(itemId, jobId, idx, file, clock.now(), last);
      this.saved.push({
        ...file,
        itemId,
        jobId,
        idx,
        version,
        item: (this.savedItem ??= savedItemOf(this.item, this.deps.store)),
      });
      const ms = clock.now() - startedAt;
      control.emit({ kind: 'downloaded', itemId, jobId, output: idx, path: file.path, bytes: file.bytes, ms });
      if (done) control.emit({ kind: 'item-final', itemId, state: 'done' });
      if (!last) return 'saved';
      this.deps.report.ended(undefined);
      return 'ended';
    } catch (error) {
      if (this.signal.aborted) return 'ended';
      this.last = {
        message: (error as Error).message,
        code: error instanceof DownloadError ? error.code : this.last.code,
      };
      settings.logger?.warn(
        { item: itemId, job: this.jobId, output: idx, error: this.last.message },
        'download failed',
      );
      const retry = !(error instanceof DownloadError) || error.refreshable;
      control.emit({ kind: 'download-failed', itemId, jobId: this.jobId, output: idx, code: this.last.code, retry });
      if (retry) return 'refresh';
      // A failure no fresh link mends (the disk, the name): the item waits for a run that fixes it.
      const { message } = this.last;
      this.gaveUp({ code: error.code, message, disk: error.diskCode !== undefined, itemOnly: error.itemOnly });
      return 'ended';
    }
  }

  /** The output's path inside the out dir, claimed for this item: never another item's file. */
  private claimName(idx: number, ext: string): { path: string; mode: 'new' | 'replace'; version: number } {
    const { store, clock, naming } = this.deps;
    const item = this.item;
    const version = store.outputFiles.versionFor(item.id, this.jobId);
    const name = outputRelativePath(naming.outputName, {
      version,
      id: item.id,
      n: idx,
      ext,
      model: item.model,
      type: item.type,
      vars: naming.vars,
    });
    if (!name.ok) throw new DownloadError(name.message, false, 'BAD_NAME');
    const owner = store.outputFiles.ownerOf(name.path);
    if (owner && owner.item_id !== item.id) {
      throw new DownloadError(
        `output ${idx} would be saved as ${name.path}, which holds the output of ${owner.item_id}; it is not overwritten. Put {{n}} in output.name (as in the default "{{id}}-{{n}}.{{ext}}") and run again`,
        false,
        'NAME_TAKEN',
      );
    }
    // An earlier, paid version of this item: never overwritten, whatever the name template became.
    if (owner && (owner.job_id !== this.jobId || owner.idx !== idx)) {
      throw new DownloadError(
        `output ${idx} would be saved as ${name.path}, which holds an earlier output of ${item.id} (job ${owner.job_id}); it is not overwritten. Put {{n}} in output.name and run again`,
        false,
        'NAME_TAKEN',
      );
    }
    store.outputFiles.claimPath(this.jobId, idx, item.id, name.path, version, clock.now());
    // Claimed before by this very output (a save cut short, or a copy found altered): what is there may be replaced.
    return { path: name.path, mode: owner ? 'replace' : 'new', version };
  }
}
