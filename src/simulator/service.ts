import { randomBytes } from 'node:crypto';
import { Accounts, type SimKey } from './accounts.js';
import { IMAGE_MODELS, VIDEO_MODELS, IMAGE_CONTENT_TYPES, VIDEO_CONTENT_TYPES } from './catalog.js';
import { IdempotencyKeys } from './idempotency.js';
import { Jobs } from './jobs.js';
import { Ledger } from './ledger.js';
import type { ResolvedOptions, Scope } from './options.js';
import { Presigner } from './presign.js';
import { SeededRandom } from './random.js';
import { SimError, invalid, limited } from './sim-error.js';
import { Submissions } from './submissions.js';
import type { FaultInjector, ResponseTamperer, SimRequest, SimResponse } from './types.js';
import { Uploads } from './uploads.js';

type Bucket = 'reads' | 'submissions' | 'uploadGrants';

interface Route {
  method: string;
  pattern: RegExp;
  bucket: Bucket;
  scope?: (req: SimRequest) => Scope | undefined;
  handle: (req: SimRequest, key: SimKey, match: RegExpExecArray) => Promise<SimResponse> | SimResponse;
}

const ok = (body: unknown, status = 200): SimResponse => ({ status, headers: {}, body });

/** The simulated service, without HTTP: a request in, a response out. */
export class Service {
  readonly ledger = new Ledger();
  readonly accounts: Accounts;
  readonly jobs: Jobs;
  readonly uploads = new Uploads();
  readonly presigner: Presigner;
  readonly random: SeededRandom;
  readonly submissions: Submissions;
  private readonly routes: Route[];
  private readonly pendingWaits = new Set<() => void>();
  private closed = false;
  /** Set by tests to answer some requests in the service's place. */
  inject: FaultInjector | undefined;
  tamper: ResponseTamperer | undefined;
  private readonly seenByRoute = new Map<string, number>();

  constructor(
    readonly options: ResolvedOptions,
    storageBase: () => string,
  ) {
    this.random = new SeededRandom(options.seed);
    this.accounts = new Accounts(options);
    this.jobs = new Jobs(this.accounts, this.ledger);
    this.presigner = new Presigner(storageBase);
    this.submissions = new Submissions(this, new IdempotencyKeys(options.idempotencyRetentionMs));
    this.routes = [
      { method: 'GET', pattern: /^\/me$/, bucket: 'reads', handle: (_r, key) => ok(this.me(key)) },
      { method: 'GET', pattern: /^\/models$/, bucket: 'reads', handle: (r) => ok(this.models(r)) },
      {
        method: 'POST',
        pattern: /^\/uploads$/,
        bucket: 'uploadGrants',
        scope: (r) => uploadScope(r.body),
        handle: (r, key) => ok(this.grantUpload(r, key)),
      },
      {
        method: 'POST',
        pattern: /^\/images$/,
        bucket: 'submissions',
        scope: () => 'image',
        handle: (r, key) => this.submissions.submit('image', r, key),
      },
      {
        method: 'POST',
        pattern: /^\/videos$/,
        bucket: 'submissions',
        scope: () => 'video',
        handle: (r, key) => this.submissions.submit('video', r, key),
      },
      {
        method: 'GET',
        pattern: /^\/jobs\/([^/]+)$/,
        bucket: 'reads',
        handle: (r, key, m) => this.getJob(r, key, decodeURIComponent(m[1]!)),
      },
      { method: 'GET', pattern: /^\/jobs$/, bucket: 'reads', handle: (r, key) => ok(this.listJobs(r, key)) },
    ];
    this.seedWebJobs();
  }

  now(): number {
    return this.options.clock.now();
  }

  async handle(req: SimRequest): Promise<SimResponse> {
    // The ledger names the key a request presented, even one it refuses (revoked): tests tell which key sent what.
    const presented = this.accounts.presented(req.headers.authorization);
    const keyLabel = presented?.label ?? null;
    let response: SimResponse;
    const route = `${req.method} ${req.path}`;
    const seen = this.seenByRoute.get(route) ?? 0;
    this.seenByRoute.set(route, seen + 1);
    const injected = this.inject?.(req, seen);
    if (injected) {
      const idem = req.headers['idempotency-key'];
      const out: SimResponse = injected === 'reset' ? { status: 0, headers: {}, body: null, drop: true } : injected;
      const code = (out.body as { error?: { code?: string } } | null)?.error?.code;
      this.ledger.record({
        kind: 'request',
        at: this.now(),
        key: keyLabel,
        method: req.method,
        path: req.path,
        status: out.drop ? 0 : out.status,
        injected: true,
        ...(code ? { code } : {}),
        ...(typeof idem === 'string' ? { idempotencyKey: idem } : {}),
      });
      return out;
    }
    try {
      if (presented) this.accounts.countRequest(presented);
      const key = presented && !presented.revoked ? presented : undefined;
      if (!key) throw new SimError(401, 'UNAUTHENTICATED', 'The API key is missing, invalid, revoked or expired.');
      this.checkAccount(key);
      const candidates = this.routes.filter((r) => r.pattern.test(req.path));
      const route = candidates.find((r) => r.method === req.method);
      if (!route) {
        throw candidates.length > 0
          ? new SimError(405, 'METHOD_NOT_ALLOWED', `${req.method} is not allowed on ${req.path}.`)
          : new SimError(404, 'NOT_FOUND', `No endpoint ${req.path}.`);
      }
      const scope = route.scope?.(req);
      if (scope && !key.scopes.includes(scope)) {
        throw new SimError(403, 'SCOPE_DENIED', `This key lacks the ${scope} scope.`, { required: scope });
      }
      const remaining = this.takeToken(key, route.bucket);
      if (route.method === 'POST' && req.bodyError) throw invalid('body', req.bodyError);
      if (route.bucket !== 'submissions') await this.delay(this.random.between(...this.options.latencyMs));
      this.jobs.settle(this.now());
      response = await route.handle(req, key, route.pattern.exec(req.path)!);
      response.headers['X-RateLimit-Remaining'] ??= String(remaining);
    } catch (error) {
      if (!(error instanceof SimError)) throw error;
      response = { status: error.status, headers: { ...error.headers }, body: error.body() };
    }
    const tampered = this.tamper?.(req, response, seen);
    if (tampered) response = tampered;
    const code = (response.body as { error?: { code?: string } } | undefined)?.error?.code;
    const idem = req.headers['idempotency-key'];
    this.ledger.record({
      kind: 'request',
      at: this.now(),
      key: keyLabel,
      method: req.method,
      path: req.path,
      status: response.drop ? 0 : response.status,
      ...(code ? { code } : {}),
      ...(typeof idem === 'string' ? { idempotencyKey: idem } : {}),
    });
    return response;
  }

  private checkAccount(key: SimKey): void {
    const account = key.account;
    if (account.suspended) throw new SimError(403, 'ACCOUNT_SUSPENDED', 'The account is deactivated.');
    if (account.apiDisabled) throw new SimError(403, 'API_DISABLED', 'The API is not open.');
    const overModeration =
      this.accounts.blockedInWindow(account, this.now()) >= this.options.limits.moderationThreshold;
    if (!account.eligible || overModeration) {
      throw new SimError(403, 'API_NOT_ELIGIBLE', 'The account does not meet the API eligibility conditions.');
    }
  }

  private takeToken(key: SimKey, bucket: Bucket): number {
    const result = key[bucket].take(this.now());
    if (!result.ok) {
      const what = { reads: 'read', submissions: 'submission', uploadGrants: 'upload grant' }[bucket];
      throw limited('RATE_LIMITED', `The ${what} rate limit of this key is reached.`, result.retryAfterMs, 0);
    }
    return result.remaining;
  }

  private me(key: SimKey): Record<string, unknown> {
    const now = this.now();
    const used = this.accounts.chargedToday(key, now);
    const l = key.limits;
    return {
      credits: this.accounts.balance(key.account),
      subscriptionCredits: key.account.subscriptionCredits,
      scopes: key.scopes,
      limits: !this.options.meShowsLimits
        ? {}
        : {
            dailyCredits: key.dailyCap,
            dailyCreditsUsed: used,
            dailyCreditsRemaining: Math.max(0, key.dailyCap - used),
            dailyResetAt: new Date(now + this.accounts.msUntilNextDay(now)).toISOString(),
            windowSeconds: l.windowSeconds,
            submissionsPerWindow: l.submissionsPerWindow,
            readsPerWindow: l.readsPerWindow,
            uploadGrantsPerWindow: l.uploadGrantsPerWindow,
            imagesInFlight: l.imagesInFlight,
            videosInFlight: l.videosInFlight,
          },
      subscription: { plan: 'simulated', active: key.account.subscriptionCredits > 0 },
      // The part before the underscore: nothing of the key's secret.
      key: {
        prefix: key.token.slice(0, key.token.indexOf('_') + 1),
        label: key.label,
        createdAt: new Date(key.createdAt).toISOString(),
      },
      ...(this.options.announce
        ? {
            'x-simulator': {
              timeScale: this.options.timeScale,
              units: `durations (windowSeconds, the key day) are in the service's time; at time scale ${this.options.timeScale} a service second lasts ${1 / this.options.timeScale} real seconds`,
              note: "this field is the simulator's own; the spec does not show /me's field names beyond credits, subscriptionCredits and scopes",
            },
          }
        : {}),
    };
  }

  private models(req: SimRequest): Record<string, unknown> {
    const type = req.query.get('type');
    if (type === 'image')
      return { models: IMAGE_MODELS.map(({ maxInputs: _unused, ...m }) => ({ type: 'image', ...m })) };
    if (type === 'video')
      return { models: VIDEO_MODELS.map(({ maxReferenceImages: _unused, ...m }) => ({ type: 'video', ...m })) };
    throw invalid('type', `type must be image or video; got ${JSON.stringify(type)}.`, ['image', 'video']);
  }

  private grantUpload(req: SimRequest, key: SimKey): Record<string, unknown> {
    const body = (req.body ?? {}) as Record<string, unknown>;
    const known = ['kind', 'target', 'contentType', 'size'];
    for (const field of Object.keys(body))
      if (!known.includes(field)) throw invalid(field, `Unknown field ${field}.`, known);
    const { kind, target, contentType, size } = body;
    if (kind !== 'image' && kind !== 'video') throw invalid('kind', 'kind must be image or video.', ['image', 'video']);
    if (target !== 'image' && target !== 'video')
      throw invalid('target', 'target must be image or video.', ['image', 'video']);
    if (target === 'image' && kind !== 'image')
      throw invalid('kind', 'Image editing takes image uploads only.', ['image']);
    const types = kind === 'image' ? IMAGE_CONTENT_TYPES : VIDEO_CONTENT_TYPES;
    if (typeof contentType !== 'string' || !types.includes(contentType))
      throw invalid('contentType', `contentType must be one of ${types.join(', ')}.`, types);
    const max = kind === 'image' ? this.options.limits.maxImageUploadBytes : this.options.limits.maxVideoUploadBytes;
    if (typeof size !== 'number' || !Number.isInteger(size) || size <= 0 || size > max) {
      throw invalid('size', `size must be the file's byte count, an integer from 1 to ${max}.`);
    }
    const now = this.now();
    const uploadKey = `upl_${randomBytes(12).toString('hex')}`;
    const expiresAt = now + this.options.uploadTtlMs;
    this.uploads.add({ key: uploadKey, owner: key, kind, target, contentType, size, expiresAt, uploaded: false });
    this.ledger.record({ kind: 'upload-grant', at: now, key: key.label, uploadKey, size, contentType });
    return {
      uploadUrl: this.presigner.sign(`/uploads/${uploadKey}`, expiresAt),
      key: uploadKey,
      expiresAt: new Date(expiresAt).toISOString(),
    };
  }

  private async getJob(req: SimRequest, key: SimKey, id: string): Promise<SimResponse> {
    const raw = req.query.get('wait');
    const wait = raw === null ? 0 : Number(raw);
    const max = this.options.limits.maxWaitSeconds;
    if (raw !== null && (raw.trim() === '' || !Number.isFinite(wait) || wait < 0 || wait > max)) {
      throw invalid('wait', `wait must be a number of seconds from 0 to ${max}; got ${JSON.stringify(raw)}.`);
    }
    const job = this.jobs.byId.get(id);
    // What a key may read is what it may list (jobVisibility): the two never disagree.
    if (!job || !this.jobs.visibleTo(job, key, this.options.jobVisibility))
      throw new SimError(404, 'NOT_FOUND', `No job ${id}.`);
    if (job.status === 'PROCESSING' && wait > 0) {
      // Timers may fire a little before the clock reaches the deadline: hold until it really has.
      const until = Math.min(this.now() + (wait * 1000) / this.options.timeScale, job.endsAt);
      while (!this.closed && this.now() < until) await this.hold(until - this.now() + 1);
      this.jobs.settle(this.now());
    }
    return ok({ job: this.renderJob(job) });
  }

  renderJob(job: Parameters<Jobs['render']>[0]): Record<string, unknown> {
    return this.jobs.render(job, this.presigner, this.now(), this.options.linkTtlMs);
  }

  private listJobs(req: SimRequest, key: SimKey): Record<string, unknown> {
    const type = req.query.get('type') ?? undefined;
    if (type !== undefined && type !== 'image' && type !== 'video')
      throw invalid('type', 'type must be image or video.', ['image', 'video']);
    const rawLimit = req.query.get('limit');
    const l = this.options.limits;
    const limit = rawLimit === null ? l.defaultListLimit : Number(rawLimit);
    if (!Number.isInteger(limit) || limit < 1 || limit > l.maxListLimit) {
      throw invalid('limit', `limit must be an integer from 1 to ${l.maxListLimit}; got ${JSON.stringify(rawLimit)}.`);
    }
    const before = decodeCursor(req.query.get('cursor'));
    const page = this.jobs.list(key, this.options.jobVisibility, type, before, limit + 1);
    const jobs = page.slice(0, limit);
    const more = page.length > limit;
    return {
      jobs: jobs.map((j) => this.renderJob(j)),
      nextCursor: more ? encodeCursor(jobs[jobs.length - 1]!.seq) : null,
    };
  }

  /** Holds a long poll; `close()` releases every hold at once. */
  private hold(ms: number): Promise<void> {
    if (this.closed || ms <= 0) return Promise.resolve();
    return new Promise((resolve) => {
      const release = () => {
        clearTimeout(timer);
        this.pendingWaits.delete(release);
        resolve();
      };
      const timer = setTimeout(release, ms);
      this.pendingWaits.add(release);
    });
  }

  delay(ms: number): Promise<void> {
    return this.hold(ms);
  }

  close(): void {
    this.closed = true;
    for (const release of [...this.pendingWaits]) release();
  }

  private seedWebJobs(): void {
    const account = this.accounts.accounts.values().next().value;
    if (!account) return;
    const now = this.now();
    for (let i = 0; i < this.options.webJobs; i++) {
      this.jobs.add({
        id: `job_web_${i + 1}`,
        type: 'image',
        origin: 'web',
        account,
        keyLabel: null,
        model: 'studio-xl',
        prompt: `A web-application job #${i + 1}`,
        params: { aspectRatio: '1:1', resolution: '1K' },
        createdAt: now - 3_600_000 + i,
        endsAt: now - 3_000_000 + i,
        end: 'COMPLETED',
        charged: 8,
        refunded: 0,
        outputCount: 1,
      });
    }
    this.jobs.settle(now);
  }
}

function uploadScope(body: unknown): Scope | undefined {
  const target = (body as { target?: unknown } | undefined)?.target;
  return target === 'video' ? 'video' : target === 'image' ? 'image' : undefined;
}

function encodeCursor(seq: number): string {
  return Buffer.from(JSON.stringify({ before: seq })).toString('base64url');
}

function decodeCursor(cursor: string | null): number {
  if (cursor === null) return Infinity;
  try {
    const before = (JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as { before?: unknown }).before;
    if (typeof before === 'number' && Number.isInteger(before)) return before;
  } catch {
    // fall through to the validation error
  }
  throw invalid('cursor', 'cursor is not one this service issued; pass nextCursor from the previous page.');
}
