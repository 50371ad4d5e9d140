import type { SimKey } from './accounts.js';
import { IMAGE_MODELS, VIDEO_MODELS, type ImageModel, type VideoModel, videoPrice } from './catalog.js';
import type { Jobs } from './jobs.js';
import type { SimLimits } from './options.js';
import { invalid } from './sim-error.js';
import type { UploadUse, Uploads } from './uploads.js';

/** What a valid submission becomes: its model, its price and the parameters the job echoes. */
export interface CheckedSubmission {
  type: 'image' | 'video';
  model: string;
  prompt: string;
  price: number;
  params: Record<string, unknown>;
}

interface Context {
  key: SimKey;
  uploads: Uploads;
  jobs: Jobs;
  limits: SimLimits;
  now: number;
}

const IMAGE_FIELDS = ['prompt', 'model', 'aspectRatio', 'resolution', 'inputs'];
const VIDEO_FIELDS = [
  'prompt',
  'model',
  'duration',
  'resolution',
  'aspectRatio',
  'imageKey',
  'referenceImageKeys',
  'videoKey',
  'sourceJobId',
];

function asObject(body: unknown): Record<string, unknown> {
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    throw invalid('body', 'The body must be a JSON object.');
  return body as Record<string, unknown>;
}

function rejectUnknown(body: Record<string, unknown>, known: string[]): void {
  for (const field of Object.keys(body)) {
    if (!known.includes(field)) throw invalid(field, `Unknown field ${field}.`, known);
  }
}

function checkPrompt(body: Record<string, unknown>, limits: SimLimits): string {
  const prompt = body.prompt;
  if (typeof prompt !== 'string' || prompt.trim() === '') throw invalid('prompt', 'prompt must be a non-empty string.');
  if (prompt.length > limits.maxPromptLength) {
    throw invalid('prompt', `prompt is ${prompt.length} characters; at most ${limits.maxPromptLength} are accepted.`);
  }
  return prompt;
}

function oneOf(body: Record<string, unknown>, field: string, allowed: string[], fallback: string): string {
  const value = body[field] ?? fallback;
  if (typeof value !== 'string' || !allowed.includes(value)) {
    throw invalid(field, `${field} must be one of ${allowed.join(', ')}; got ${JSON.stringify(value)}.`, allowed);
  }
  return value;
}

export function checkImageSubmission(raw: unknown, ctx: Context): CheckedSubmission {
  const body = asObject(raw);
  rejectUnknown(body, IMAGE_FIELDS);
  const prompt = checkPrompt(body, ctx.limits);
  const model: ImageModel | undefined = IMAGE_MODELS.find((m) => m.id === body.model);
  if (!model)
    throw invalid(
      'model',
      `Unknown image model ${JSON.stringify(body.model)}.`,
      IMAGE_MODELS.map((m) => m.id),
    );
  if (body.aspectRatio !== undefined && (typeof body.aspectRatio !== 'string' || !/^\d+:\d+$/.test(body.aspectRatio))) {
    throw invalid('aspectRatio', 'aspectRatio must be a string of the form <w>:<h>.', model.aspectRatios);
  }
  const aspectRatio = oneOf(body, 'aspectRatio', model.aspectRatios, '1:1');
  const resolution = oneOf(body, 'resolution', model.resolutions, model.resolutions[0]!);
  const inputs = body.inputs;
  if (model.kind === 'generate') {
    if (inputs !== undefined) {
      throw invalid(
        'model',
        `Model ${model.id} generates from text; inputs need an edit model.`,
        IMAGE_MODELS.filter((m) => m.kind === 'edit').map((m) => m.id),
      );
    }
  } else {
    if (!Array.isArray(inputs) || inputs.length === 0)
      throw invalid('inputs', `Model ${model.id} edits images: inputs must list at least one { key }.`);
    if (inputs.length > model.maxInputs)
      throw invalid('inputs', `Model ${model.id} takes at most ${model.maxInputs} inputs.`);
    inputs.forEach((input, i) => {
      const key = input !== null && typeof input === 'object' ? (input as Record<string, unknown>).key : undefined;
      const problem = ctx.uploads.problem(
        key,
        ctx.key,
        { field: `inputs[${i}].key`, kind: 'image', target: 'image' },
        ctx.now,
      );
      if (problem) throw invalid(`inputs[${i}].key`, problem);
    });
  }
  return { type: 'image', model: model.id, prompt, price: model.creditCost, params: { aspectRatio, resolution } };
}

export function checkVideoSubmission(raw: unknown, ctx: Context): CheckedSubmission {
  const body = asObject(raw);
  rejectUnknown(body, VIDEO_FIELDS);
  const prompt = checkPrompt(body, ctx.limits);
  const model: VideoModel | undefined = VIDEO_MODELS.find((m) => m.id === body.model);
  if (!model)
    throw invalid(
      'model',
      `Unknown video model ${JSON.stringify(body.model)}.`,
      VIDEO_MODELS.map((m) => m.id),
    );
  if (body.duration !== undefined && typeof body.duration !== 'string') {
    throw invalid('duration', 'duration must be a string holding a number of seconds.', model.durations);
  }
  const duration = oneOf(body, 'duration', model.durations, model.durations[0]!);
  const resolution = oneOf(body, 'resolution', model.resolutions, model.resolutions[0]!);
  const aspectRatio = oneOf(body, 'aspectRatio', model.aspectRatios, model.aspectRatios[0]!);
  checkVideoInputs(body, model, ctx);
  const price = videoPrice(model, resolution, duration);
  if (price === undefined)
    throw invalid('resolution', `No price for ${resolution} at ${duration} s on ${model.id}.`, model.resolutions);
  return { type: 'video', model: model.id, prompt, price, params: { duration, resolution, aspectRatio } };
}

function checkVideoInputs(body: Record<string, unknown>, model: VideoModel, ctx: Context): void {
  const given = ['imageKey', 'referenceImageKeys', 'videoKey', 'sourceJobId'].filter((f) => body[f] !== undefined);
  const allowedByMode: Record<VideoModel['mode'], string[]> = {
    'image-to-video': ['imageKey'],
    'reference-to-video': ['referenceImageKeys'],
    'video-extend': ['videoKey', 'sourceJobId'],
    'video-edit': ['videoKey', 'sourceJobId'],
  };
  const allowed = allowedByMode[model.mode];
  for (const field of given) {
    if (!allowed.includes(field))
      throw invalid(field, `Model ${model.id} (${model.mode}) does not take ${field}.`, allowed);
  }
  const imageUse = (field: string): UploadUse => ({ field, kind: 'image', target: 'video' });
  const useKey = (key: unknown, field: string, use: UploadUse = imageUse(field)) => {
    const problem = ctx.uploads.problem(key, ctx.key, use, ctx.now);
    if (problem) throw invalid(field, problem);
  };
  switch (model.mode) {
    case 'image-to-video':
      if (body.imageKey === undefined)
        throw invalid('imageKey', `Model ${model.id} (image-to-video) needs imageKey, the first frame.`);
      useKey(body.imageKey, 'imageKey');
      return;
    case 'reference-to-video': {
      const keys = body.referenceImageKeys;
      if (!Array.isArray(keys) || keys.length === 0) {
        throw invalid(
          'referenceImageKeys',
          `Model ${model.id} (reference-to-video) needs referenceImageKeys, a non-empty array.`,
        );
      }
      if (keys.length > model.maxReferenceImages) {
        throw invalid(
          'referenceImageKeys',
          `Model ${model.id} takes at most ${model.maxReferenceImages} reference images.`,
        );
      }
      for (const [i, key] of keys.entries()) useKey(key, `referenceImageKeys[${i}]`);
      return;
    }
    case 'video-extend':
    case 'video-edit':
      if (given.length !== 1)
        throw invalid(
          'videoKey',
          `Model ${model.id} (${model.mode}) needs exactly one of videoKey or sourceJobId.`,
          allowed,
        );
      if (body.videoKey !== undefined) {
        useKey(body.videoKey, 'videoKey', { field: 'videoKey', kind: 'video', target: 'video' });
        return;
      }
      checkSourceJob(body.sourceJobId, ctx);
  }
}

function checkSourceJob(id: unknown, ctx: Context): void {
  const job = typeof id === 'string' ? ctx.jobs.byId.get(id) : undefined;
  if (!job || job.account !== ctx.key.account || job.keyLabel !== ctx.key.label)
    throw invalid('sourceJobId', 'sourceJobId does not name a job of this key.');
  if (job.type !== 'video') throw invalid('sourceJobId', 'sourceJobId must name a video job.');
  if (job.status !== 'COMPLETED')
    throw invalid('sourceJobId', `The source job is ${job.status}; it must be COMPLETED.`);
}
