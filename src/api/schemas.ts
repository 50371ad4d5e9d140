import * as z from 'zod';
import type { Account, Job, JobsPage, MediaType, Model, UploadGrant } from './types.js';

/**
 * Response schemas: strict on the fields the spec shows, tolerant of the ones
 * it leaves unshown (envelopes, id field names, price fields, extra fields).
 */
const httpUrl = z.string().refine((s) => /^https?:\/\//i.test(s), { message: 'expected an http(s) URL' });

const jobSchema = z.looseObject({
  id: z.string().min(1),
  status: z.string().min(1),
  outputs: z
    .array(z.looseObject({ url: httpUrl.optional(), downloadUrl: httpUrl, contentType: z.string().optional() }))
    .nullish(),
  credits: z
    .looseObject({ refunded: z.number().nonnegative().optional(), charged: z.number().nonnegative().optional() })
    .nullish(),
  error: z.looseObject({ code: z.string(), message: z.string().optional() }).nullish(),
  origin: z.string().nullish(),
});

function toJob(raw: z.infer<typeof jobSchema>): Job {
  return {
    id: raw.id,
    status: raw.status,
    outputs: (raw.outputs ?? []).map((o) => ({
      downloadUrl: o.downloadUrl,
      ...(o.url ? { url: o.url } : {}),
      ...(o.contentType ? { contentType: o.contentType } : {}),
    })),
    refunded: raw.credits?.refunded ?? 0,
    ...(raw.credits?.charged !== undefined ? { charged: raw.credits.charged } : {}),
    ...(raw.error
      ? { error: { code: raw.error.code, ...(raw.error.message ? { message: raw.error.message } : {}) } }
      : {}),
    ...(raw.origin ? { origin: raw.origin } : {}),
    raw: raw as Record<string, unknown>,
  };
}

/** `{ job }` as the spec shows it, or a bare job. */
export const jobEnvelope = z
  .union([z.looseObject({ job: jobSchema }).transform((r) => r.job), jobSchema])
  .transform(toJob);

const stringList = z.array(z.union([z.string(), z.number()]).transform(String));

const modelSchema = z
  .looseObject({
    id: z.string().optional(),
    model: z.string().optional(),
    slug: z.string().optional(),
    kind: z.string().optional(),
    creditCost: z.unknown().optional(),
    mode: z.string().optional(),
    durations: stringList.optional(),
    resolutions: z.array(z.string()).optional(),
    aspectRatios: z.array(z.string()).optional(),
  })
  .refine((m) => Boolean(m.id ?? m.model ?? m.slug), { message: 'a model needs an id (as id, model or slug)' });

function toModel(raw: z.infer<typeof modelSchema>, type: MediaType): Model {
  const kind = raw.kind === 'generate' || raw.kind === 'edit' ? raw.kind : undefined;
  return {
    id: (raw.id ?? raw.model ?? raw.slug)!,
    type,
    ...(kind ? { kind } : {}),
    ...(typeof raw.creditCost === 'number' ? { creditCost: raw.creditCost } : {}),
    ...(raw.mode ? { mode: raw.mode } : {}),
    ...(raw.durations ? { durations: raw.durations } : {}),
    ...(raw.resolutions ? { resolutions: raw.resolutions } : {}),
    ...(raw.aspectRatios ? { aspectRatios: raw.aspectRatios } : {}),
    raw: raw as Record<string, unknown>,
  };
}

/** A bare array, or one wrapped as `models`, `data` or `items`. */
export function modelList(type: MediaType) {
  const list = z.array(modelSchema);
  return z
    .union([
      list,
      z.looseObject({ models: list }).transform((r) => r.models),
      z.looseObject({ data: list }).transform((r) => r.data),
      z.looseObject({ items: list }).transform((r) => r.items),
    ])
    .transform((models) => models.map((m) => toModel(m, type)));
}

const DAILY_CAP_NAMES = [
  'dailyCap',
  'dailyCredits',
  'dailyCreditCap',
  'dailyCreditLimit',
  'creditsPerDay',
  'daily_cap',
];

/** Where the key's limits may sit in `/me` (the spec does not show their names). */
function limitPlaces(raw: Record<string, unknown>): Record<string, unknown>[] {
  const key = raw.key as Record<string, unknown> | undefined;
  return [raw, raw.limits, key, key?.limits].filter(
    (p): p is Record<string, unknown> => Boolean(p) && typeof p === 'object',
  );
}

function findDailyCap(raw: Record<string, unknown>): number | undefined {
  for (const place of limitPlaces(raw)) {
    for (const name of DAILY_CAP_NAMES) {
      const value = place[name];
      if (typeof value === 'number') return value;
      if (value && typeof value === 'object' && typeof (value as { limit?: unknown }).limit === 'number')
        return (value as { limit: number }).limit;
    }
  }
  return undefined;
}

const USED_TODAY_NAMES = [
  'dailyCreditsUsed',
  'usedToday',
  'creditsUsedToday',
  'dailyUsed',
  'dailyCapUsed',
  'daily_credits_used',
];
const RESET_NAMES = ['dailyResetAt', 'resetAt', 'dailyCapResetAt', 'resetsAt', 'daily_reset_at'];

/** Credits charged today and when the day's cap resets, where `/me` names them in a way we recognise. */
function findDailyUsage(raw: Record<string, unknown>): { usedToday?: number; resetAt?: number } {
  const out: { usedToday?: number; resetAt?: number } = {};
  for (const place of limitPlaces(raw)) {
    // A number under a usage name, or `used` inside the cap's own object ({ limit, used, resetAt }).
    for (const name of [...USED_TODAY_NAMES, ...DAILY_CAP_NAMES]) {
      const value = place[name];
      if (out.usedToday === undefined && typeof value === 'number' && USED_TODAY_NAMES.includes(name))
        out.usedToday = value;
      if (
        out.usedToday === undefined &&
        value &&
        typeof value === 'object' &&
        typeof (value as { used?: unknown }).used === 'number'
      )
        out.usedToday = (value as { used: number }).used;
    }
    for (const name of [...DAILY_CAP_NAMES, ...RESET_NAMES]) {
      const value = place[name];
      const at = RESET_NAMES.includes(name)
        ? value
        : value && typeof value === 'object'
          ? (value as { resetAt?: unknown }).resetAt
          : undefined;
      const ms = typeof at === 'number' ? (at < 1e12 ? at * 1000 : at) : typeof at === 'string' ? Date.parse(at) : NaN;
      if (out.resetAt === undefined && Number.isFinite(ms)) out.resetAt = ms;
    }
  }
  return out;
}

/** The names a key's other limits may go by in `/me` (not shown by the spec): per window, per minute, or `{ limit }`. */
const RATE_NAMES = {
  submit: ['submissionsPerWindow', 'submissionsPerMinute', 'submitPerMinute', 'submissions_per_minute', 'submissions'],
  read: ['readsPerWindow', 'readsPerMinute', 'reads_per_minute', 'reads'],
  upload: [
    'uploadGrantsPerWindow',
    'uploadGrantsPerMinute',
    'uploadsPerMinute',
    'upload_grants_per_minute',
    'uploadGrants',
    'uploads',
  ],
} as const;
const IN_FLIGHT_NAMES = {
  image: ['imagesInFlight', 'imageJobsInFlight', 'maxImagesInFlight', 'images_in_flight', 'imageConcurrency'],
  video: ['videosInFlight', 'videoJobsInFlight', 'maxVideosInFlight', 'videos_in_flight', 'videoConcurrency'],
} as const;

function numberOrLimit(value: unknown): number | undefined {
  if (typeof value === 'number' && Number.isFinite(value) && value > 0) return value;
  const limit = value && typeof value === 'object' ? (value as { limit?: unknown }).limit : undefined;
  return typeof limit === 'number' && Number.isFinite(limit) && limit > 0 ? limit : undefined;
}

/** The key's rate and in-flight limits, where `/me` names them in a way we recognise (per window: with `windowSeconds`, else a minute). */
function findKeyLimits(raw: Record<string, unknown>): NonNullable<Account['limits']> {
  const out: NonNullable<Account['limits']> = {};
  for (const place of limitPlaces(raw)) {
    const window =
      typeof place.windowSeconds === 'number' && place.windowSeconds > 0 ? place.windowSeconds * 1000 : 60_000;
    for (const [kind, names] of Object.entries(RATE_NAMES) as [keyof typeof RATE_NAMES, readonly string[]][]) {
      for (const name of names) {
        const count = numberOrLimit(place[name]);
        if (out[kind] || count === undefined) continue;
        const own =
          place[name] && typeof place[name] === 'object'
            ? (place[name] as { windowSeconds?: unknown }).windowSeconds
            : undefined;
        out[kind] = {
          count,
          windowMs:
            typeof own === 'number' && own > 0 ? own * 1000 : /PerMinute|per_minute/.test(name) ? 60_000 : window,
        };
      }
    }
    for (const [type, names] of Object.entries(IN_FLIGHT_NAMES) as ['image' | 'video', readonly string[]][]) {
      for (const name of names) {
        const n = numberOrLimit(place[name]);
        if (n !== undefined) out[type === 'image' ? 'maxImagesInFlight' : 'maxVideosInFlight'] ??= n;
      }
    }
  }
  return out;
}

const meSchema = z.looseObject({
  credits: z.number(),
  subscriptionCredits: z.number().nullish(),
  scopes: z.array(z.string()),
});

export const meEnvelope = z
  .union([
    meSchema,
    z.looseObject({ me: meSchema }).transform((r) => r.me),
    z.looseObject({ data: meSchema }).transform((r) => r.data),
    z.looseObject({ account: meSchema }).transform((r) => r.account),
  ])
  .transform((raw): Account => {
    const dailyCap = findDailyCap(raw as Record<string, unknown>);
    const usage = findDailyUsage(raw as Record<string, unknown>);
    const limits = findKeyLimits(raw as Record<string, unknown>);
    return {
      ...usage,
      ...(Object.keys(limits).length ? { limits } : {}),
      credits: raw.credits,
      ...(typeof raw.subscriptionCredits === 'number' ? { subscriptionCredits: raw.subscriptionCredits } : {}),
      scopes: raw.scopes,
      ...(dailyCap !== undefined ? { dailyCap } : {}),
      raw: raw as Record<string, unknown>,
    };
  });

/** ISO text, or epoch seconds or milliseconds. */
const timestamp = z.union([z.string(), z.number()]).transform((v, ctx) => {
  const ms = typeof v === 'number' ? (v < 1e12 ? v * 1000 : v) : Date.parse(v);
  if (Number.isNaN(ms)) {
    ctx.addIssue({ code: 'custom', message: `not a timestamp: ${String(v)}` });
    return z.NEVER;
  }
  return new Date(ms);
});

const grantSchema = z.looseObject({ uploadUrl: httpUrl, key: z.string().min(1), expiresAt: timestamp.nullish() });

export const uploadGrantEnvelope = z
  .union([grantSchema, z.looseObject({ upload: grantSchema }).transform((r) => r.upload)])
  .transform(
    (g): UploadGrant => ({ uploadUrl: g.uploadUrl, key: g.key, ...(g.expiresAt ? { expiresAt: g.expiresAt } : {}) }),
  );

const jobArray = z.array(jobSchema);

export const jobsPage = z
  .looseObject({
    jobs: jobArray.optional(),
    data: jobArray.optional(),
    items: jobArray.optional(),
    nextCursor: z.string().nullish(),
    next_cursor: z.string().nullish(),
  })
  .refine((p) => Boolean(p.jobs ?? p.data ?? p.items), {
    message: 'a job list page needs its jobs (as jobs, data or items)',
  })
  .transform((p): JobsPage => {
    const cursor = p.nextCursor ?? p.next_cursor;
    return { jobs: (p.jobs ?? p.data ?? p.items)!.map(toJob), ...(cursor ? { nextCursor: cursor } : {}) };
  });
