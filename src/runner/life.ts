import type { Job } from '../api/index.js';
import { thumbsBeside } from '../copies/thumbs/kept.js';
import type { ManifestTop } from '../manifest/index.js';
import type { Logger } from '../log/logger.js';
import type { ResolvedRunOptions } from '../options/resolve.js';
import type { Transfers } from '../scheduler/transfers.js';
import type { OutputSink } from '../sink/index.js';
import type { DownloadingItem, ItemRow, Store } from '../store/index.js';
import type { Control } from './core/control.js';
import type { Feeder } from './feed/feeder.js';
import type { Credits } from './keys/credits.js';
import type { KeyLanes } from './keys/lanes.js';
import type { KeyRoster } from './keys/roster.js';
import { Copier } from './copies/copier.js';
import { RunThumbnails } from '../copies/thumbs/run.js';
import { recordCrash } from './item/crash.js';
import { downloadJob } from './item/download-task.js';
import type { DownloadDeps, SavedOutput } from './item/download-task.js';
import { JobTask } from './item/job-task.js';
import type { JobTaskDeps } from './item/job-task.js';
import type { KeyLane } from './keys/lanes.js';
import { Publisher } from './publish/publisher.js';

/** Stages 3 and 4, and the thumbnails beside them: each made only where the run needs it (see laterStagesOf). */
export interface LaterStages {
  /** Stage 3: made when the manifest asks for copies or checks anywhere. */
  readonly copier: Copier | undefined;
  /** Stage 4: made when outputs go to a bucket. */
  readonly publisher: Publisher | undefined;
  /** Beside stage 3: made when outputs are kept in a folder and the state in a file. */
  readonly thumbnails: RunThumbnails | undefined;
}

/** What a job's life is given: each stage's deps, and the run's parts it hands items between. */
export interface JobLifeDeps {
  readonly job: JobTaskDeps;
  readonly download: DownloadDeps;
  readonly later: LaterStages;
  readonly store: Store;
  readonly control: Control;
  readonly feeder: Feeder;
  readonly credits: Credits;
  readonly roster: KeyRoster;
  readonly lanes: KeyLanes;
  /** The downloads' places (stage 2). */
  readonly downloads: Transfers;
  /** What a crash is recorded with. */
  readonly said: { readonly now: () => number; readonly logger?: Logger | undefined };
}

/**
 * A job's life, top to bottom. Each stage is a call to its room, run where
 * its resource is, and hands what it made to the next:
 *
 * 1. submit and poll (item/job-task.ts), holding an in-flight slot of the
 *    key: the attempt and its uploads, the submission, the polls, the retries;
 * 2. download and verify (item/download-task.ts), in a download place: each
 *    output saved and recorded, the item done with its last one;
 * 3. copies and checks (copies/copier.ts), a few at a time: each saved image
 *    output's checks and web copies; beside them, not waited for by the next
 *    stage, the review's thumbnail of an output kept here (src/copies/thumbs/run.ts);
 * 4. publish (publish/publisher.ts), with a bucket: each saved output and
 *    each staged web copy, put and verified, its local file then removed.
 *
 * The item's final state is recorded by the stage that reaches it: failed,
 * blocked or rejected in 1, done in 2. A killed run's items come back in 1
 * or 2 (sync/recovery.ts), what 3 and 4 left from the state at their start.
 * Events only say what happened: no stage waits for one.
 */
export class JobLife {
  private readonly copier: Copier | undefined;
  private readonly publisher: Publisher | undefined;
  private readonly thumbnails: RunThumbnails | undefined;
  /** The done items' outputs being checked on disk, alongside the run (stage 2 for earlier runs' items). */
  private checking: Promise<void> | undefined;
  /** Originals whose copies are being made, each handed to the publisher once they are. */
  private readonly handoffs = new Set<Promise<void>>();

  constructor(private readonly parts: JobLifeDeps) {
    ({ copier: this.copier, publisher: this.publisher, thumbnails: this.thumbnails } = parts.later);
  }

  /** Stages 3 and 4 take up what earlier runs left them: the copier first (a staged web copy found gone is unrecorded, to be made again, before the publisher takes up the rest). */
  startAfterDownloads(): void {
    this.copier?.start();
    this.publisher?.start();
  }

  /** Stage 1: the item's job on `lane`; `assign`: its credits count against the budget and the key's cap from now. */
  begin(item: ItemRow, lane: KeyLane, price: number | undefined, assign: boolean): void {
    const { feeder, credits, roster, store } = this.parts;
    feeder.claim(item);
    const reservation = credits.forAttempt(item, lane.cap, price, assign);
    void lane.slots[item.type].start(async () => {
      try {
        const completed = await new JobTask(this.parts.job, lane, item, reservation).run();
        // Queued while the slot is still held: the run never looks idle between the two stages.
        // Handed on without its spec: a backlog of downloads holds only what names their outputs.
        const { id, type, model, state } = item;
        if (completed) this.downloadOutputs({ id, type, model, state }, completed.jobId, completed.job);
      } catch (error) {
        recordCrash(store, this.parts.said, item.id, error);
      } finally {
        reservation.close();
        feeder.release(item.id);
        if (!lane.active) roster.settleForLeftKey(item.id, lane);
      }
    });
  }

  /** Stage 2: the completed job's outputs (`fresh`: the job as its last poll read it, links and all). */
  downloadOutputs(item: DownloadingItem, jobId: string, fresh?: Job): void {
    const { downloads, roster, store, control } = this.parts;
    void downloads.add(item.id, async (progress) => {
      try {
        const saved = await downloadJob(this.parts.download, roster.laneOfJob(item.id), item, jobId, progress, fresh);
        for (const output of saved) this.saved(output);
      } catch (error) {
        recordCrash(store, this.parts.said, item.id, error);
      } finally {
        if (store.queue.hasDependents(item.id)) control.wake();
      }
    });
  }

  /** Stage 2 for earlier runs' done items: their outputs checked alongside the run; one found gone comes back through `downloadOutputs`. */
  verify(checking: Promise<void>): void {
    this.checking = checking.finally(() => {
      this.checking = undefined;
      this.parts.control.wake();
    });
  }

  /**
   * Stages 3 and 4 of a saved output: its copies and checks, then its
   * publication. A staged original is removed once published, so it is
   * published only once its copies were made from it.
   */
  private saved(output: SavedOutput): void {
    this.thumbnails?.saved(output);
    const copying = this.copier?.saved(output);
    if (!copying) return void this.publisher?.saved(output);
    const handoff = copying.finally(() => {
      this.handoffs.delete(handoff);
      this.publisher?.saved(output);
    });
    this.handoffs.add(handoff);
  }

  /** Earlier runs' outputs are being checked: the run is not idle (one found gone is downloaded again). */
  get verifying(): boolean {
    return this.checking !== undefined;
  }

  /** Stages 3 and 4 at work (copies being made, files published): a known wait for the watchdog. */
  get laterStagesBusy(): boolean {
    return (this.publisher?.busy ?? false) || (this.copier?.busy ?? false) || (this.thumbnails?.busy ?? false);
  }

  /** Once the feed has ended: every job's later stages, in order, until none has anything left. */
  async settled(): Promise<void> {
    const { lanes, downloads } = this.parts;
    // Outputs found gone from disk join the downloads: the feed loops may have ended before the check did.
    await this.checking;
    await Promise.all(lanes.all.flatMap((lane) => [lane.slots.image.onIdle(), lane.slots.video.onIdle()]));
    await downloads.onIdle();
    // Copies are written through the sink (published with the outputs when it is a bucket): made before the last wait.
    await this.copier?.onIdle();
    // Each original copied is handed on to be published: none still on its way when the publisher is asked.
    await Promise.all([...this.handoffs]);
    await this.publisher?.onIdle();
    // An interrupted run ends at once: what it had not made, review makes.
    if (!this.parts.control.abort.signal.aborted) await this.thumbnails?.settled();
  }

  /** The run has ended: its thumbnail maker too (what it had not made, review makes). */
  close(): void {
    this.thumbnails?.close();
  }
}

/** Stages 3 and 4 and the thumbnails, as the run's manifest and output place ask for them. */
export function laterStagesOf(
  run: {
    readonly manifest: ManifestTop;
    readonly options: Pick<ResolvedRunOptions, 'maxUnpublishedBytes'>;
    readonly outputs: OutputSink;
    readonly store: Store;
    readonly statePath?: string | undefined;
    readonly logger?: Logger | undefined;
  },
  control: Control,
  now: () => number,
): LaterStages {
  const { store, outputs, logger } = run;
  const publishing = outputs.publishing;
  const publisher =
    publishing &&
    new Publisher({ store, control, publishing, now, maxUnpublishedBytes: run.options.maxUnpublishedBytes, logger });
  const copier = asksCopies(run.manifest.manifest)
    ? new Copier({ store, control, outputs, now, logger, staged: (copy) => publisher?.copied(copy) })
    : undefined;
  const thumbnails =
    run.statePath && outputs.here && !publishing
      ? new RunThumbnails({ dir: thumbsBeside(run.statePath), outputs: outputs.here })
      : undefined;
  return { copier, publisher, thumbnails };
}

/**
 * Whether the manifest asks for web copies or checks anywhere: without any,
 * no copier is made (its look at the state for what is left to copy reads
 * every output's item: 80 ms of a 100,000-item restart).
 */
function asksCopies(manifest: ManifestTop['manifest']): boolean {
  const asks = (part: { derivatives?: unknown; checks?: unknown } | undefined) =>
    part?.derivatives !== undefined || part?.checks !== undefined;
  return asks(manifest) || asks(manifest.defaults) || manifest.items.some(asks);
}
