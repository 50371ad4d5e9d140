import type { ImageSubmission, VideoSubmission } from '../../api/index.js';
import type { InputRef, ItemSpec } from '../../manifest/index.js';
import type { OutputSink } from '../../sink/index.js';
import type { Store } from '../../store/index.js';
import { InputError, uploadKeyFor, type UploadContext } from './uploads.js';

/** The first output on disk of a finished item's latest job, for `{ from: item }` inputs. */
async function outputOf(store: Store, outputs: OutputSink, itemId: string, used: Map<string, number>): Promise<string> {
  const jobId = store.attempts.latest(itemId)?.job_id;
  const first = jobId ? store.outputFiles.ofJob(jobId).find((o) => o.path) : undefined;
  const path = first?.path ? await outputs.localFile(first.path) : undefined;
  if (!path) throw new InputError(`the output of ${itemId} is not on disk`);
  used.set(itemId, first!.version);
  return path;
}

/**
 * The submission body of an item: inputs uploaded (or reused), `source` turned
 * into the source job's id when that job is this key's, else into an upload
 * of its output (another key may not be allowed to name that job).
 */
export async function buildBody(
  spec: ItemSpec,
  ctx: UploadContext & { outputs: OutputSink },
  /** Filled with the version of each earlier item's output the body takes. */
  used: Map<string, number> = new Map(),
): Promise<ImageSubmission | VideoSubmission> {
  const target = spec.type;
  const key = async (ref: InputRef, expect: 'image' | 'video') =>
    uploadKeyFor(
      ctx,
      ref.kind === 'file' ? ref.path : await outputOf(ctx.store, ctx.outputs, ref.id, used),
      target,
      expect,
    );
  const common = {
    prompt: spec.prompt,
    model: spec.model,
    ...(spec.aspectRatio ? { aspectRatio: spec.aspectRatio } : {}),
    ...(spec.resolution ? { resolution: spec.resolution } : {}),
  };
  if (spec.type === 'image') {
    const inputs = spec.inputs
      ? await Promise.all(spec.inputs.map(async (r) => ({ key: await key(r, 'image') })))
      : undefined;
    return { ...common, ...(inputs ? { inputs } : {}) };
  }
  const body: VideoSubmission = { ...common, ...(spec.duration ? { duration: spec.duration } : {}) };
  if (spec.image) body.imageKey = await key(spec.image, 'image');
  if (spec.referenceImages)
    body.referenceImageKeys = await Promise.all(spec.referenceImages.map((r) => key(r, 'image')));
  if (spec.video) body.videoKey = await key(spec.video, 'video');
  if (spec.source) {
    const sourceJob = ctx.store.attempts.latest(spec.source);
    if (!sourceJob?.job_id || sourceJob.status !== 'completed')
      throw new InputError(`the source item ${spec.source} has no completed job`);
    if (sourceJob.key_fp === ctx.keyFp) {
      body.sourceJobId = sourceJob.job_id;
      const version = ctx.store.outputFiles.ofJob(sourceJob.job_id)[0]?.version;
      if (version !== undefined) used.set(spec.source, version);
    } else body.videoKey = await key({ kind: 'item', id: spec.source }, 'video');
  }
  return body;
}
