import { Readable } from 'node:stream';
import type { Dispatcher } from 'undici';
export type { ApiAnswer, LimitKind } from './answers.js';
import type * as z from 'zod';
import type { Logger } from '../log/logger.js';
import { EventBus } from '../util/event-bus.js';
import { scrubSecrets } from '../util/secrets.js';
import { createDispatcher, request } from './http.js';
import { ResponseShapeError, StorageError, TransportError, apiErrorFrom } from './errors.js';
import { answerOf, header, transportError, type ApiAnswer } from './answers.js';
import { FirstContact } from './first-contact.js';
import { IdleWatch, describeStorageUrl, storageError } from './storage.js';
import { jobEnvelope, jobsPage, meEnvelope, modelList, uploadGrantEnvelope } from './schemas.js';
import type {
  Account,
  ImageSubmission,
  Job,
  JobsPage,
  MediaType,
  Model,
  UploadGrant,
  UploadGrantRequest,
  VideoSubmission,
} from './types.js';

export interface ClientOptions {
  /** The service's base URL, ending with its version segment (`…/v1`). */
  baseUrl: string;
  apiKey: string;
  /** Injectable for tests; by default one keep-alive pool per origin. */
  dispatcher?: Dispatcher;
  /** Timeout for ordinary requests; long polls get their wait on top. */
  timeoutMs?: number;
  logger?: Logger;
  now?: () => number;
}

export interface Download {
  body: Readable;
  contentLength?: number;
  contentType?: string;
  /** Stops the transfer. (Destroying an undici body with no error listener throws an uncaught AbortError.) */
  cancel(): void;
}

const LONG_POLL_MARGIN_MS = 15_000;

/** A request of the service's under way: when it left, how long it may rightly wait (a long poll's wait), and its abort. */
interface Outstanding {
  sentAt: number;
  waitMs: number;
  controller: AbortController;
  abandoned: boolean;
}

/** The one HTTP client of the service and its object storage. */
export class ApiClient {
  /** The service's requests under way: an outage may have swallowed them (see abandonSentBefore). */
  private readonly outstanding = new Set<Outstanding>();
  private readonly base: URL;
  private readonly dispatcher: Dispatcher;
  private readonly ownsDispatcher: boolean;
  private readonly timeoutMs: number;
  private readonly now: () => number;
  private readonly firstContact: FirstContact;
  /** Every answer of the service to this client, to any number of listeners (a run's lanes, its reachability, its events). */
  readonly answers = new EventBus<ApiAnswer>();

  constructor(private readonly options: ClientOptions) {
    if (!/^https?:\/\//i.test(options.baseUrl))
      throw new Error(`The base URL must be http(s); got ${JSON.stringify(options.baseUrl)}.`);
    this.base = new URL(options.baseUrl.replace(/\/+$/, ''));
    this.dispatcher = options.dispatcher ?? createDispatcher();
    this.ownsDispatcher = !options.dispatcher;
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.now = options.now ?? Date.now;
    this.firstContact = new FirstContact(this.baseUrl);
  }

  /** The base URL as the user gave it, without a trailing slash (it holds no secret). */
  get baseUrl(): string {
    return `${this.base.origin}${this.base.pathname}`.replace(/\/+$/, '');
  }

  /** The key's account; `timeoutMs` bounds this request alone (a probe of a service that may swallow it). */
  me(signal?: AbortSignal, timeoutMs?: number): Promise<Account> {
    return this.call('GET', '/me', meEnvelope, {
      ...(signal ? { signal } : {}),
      ...(timeoutMs !== undefined ? { timeoutMs } : {}),
    });
  }

  /**
   * When the oldest request under way was sent, among those not answered
   * `silentMs` after they should have been (a long poll's wait counted in,
   * as `scaled` makes it real time: a time-scaled simulator's wait is short).
   */
  overdueSince(now: number, silentMs: number, scaled: (ms: number) => number = (ms) => ms): number | undefined {
    let oldest: number | undefined;
    for (const o of this.outstanding)
      if (now - o.sentAt > scaled(o.waitMs) + silentMs && (oldest === undefined || o.sentAt < oldest))
        oldest = o.sentAt;
    return oldest;
  }

  /**
   * The requests sent before `before` that are still waiting are given up:
   * the service answers again, but an outage that swallowed them (a load
   * balancer that lost its backends) never will. Each fails with a
   * TransportError of code ABANDONED, and its caller sends it again (a
   * submission with its same key). Returns how many.
   */
  abandonSentBefore(before: number): number {
    return this.abandon((o) => o.sentAt < before);
  }

  /** The requests still waiting `lateMs` past what they may rightly wait are given up (as abandonSentBefore does). */
  abandonOverdue(now: number, lateMs: number, scaled: (ms: number) => number = (ms) => ms): number {
    return this.abandon((o) => now - o.sentAt > scaled(o.waitMs) + lateMs);
  }

  private abandon(which: (o: Outstanding) => boolean): number {
    let n = 0;
    for (const o of this.outstanding) {
      if (o.abandoned || !which(o)) continue;
      o.abandoned = true;
      o.controller.abort();
      n++;
    }
    return n;
  }

  listModels(type: MediaType, timeoutMs?: number): Promise<Model[]> {
    return this.call('GET', `/models?type=${type}`, modelList(type), timeoutMs !== undefined ? { timeoutMs } : {});
  }

  createUpload(grant: UploadGrantRequest): Promise<UploadGrant> {
    return this.call('POST', '/uploads', uploadGrantEnvelope, { body: grant });
  }

  submitImage(body: ImageSubmission, idempotencyKey: string): Promise<Job> {
    return this.call('POST', '/images', jobEnvelope, { body, idempotencyKey });
  }

  submitVideo(body: VideoSubmission, idempotencyKey: string): Promise<Job> {
    return this.call('POST', '/videos', jobEnvelope, { body, idempotencyKey });
  }

  /** With `waitSeconds`, the service holds the request until the job ends or the wait runs out. */
  getJob(id: string, waitSeconds = 0, signal?: AbortSignal): Promise<Job> {
    const query = waitSeconds > 0 ? `?wait=${waitSeconds}` : '';
    return this.call('GET', `/jobs/${encodeURIComponent(id)}${query}`, jobEnvelope, {
      timeoutMs: this.timeoutMs + waitSeconds * 1000 + Math.min(LONG_POLL_MARGIN_MS, this.timeoutMs),
      waitMs: waitSeconds * 1000,
      ...(signal ? { signal } : {}),
    });
  }

  listJobs(params: { type?: MediaType; limit?: number; cursor?: string } = {}): Promise<JobsPage> {
    const query = new URLSearchParams();
    if (params.type) query.set('type', params.type);
    if (params.limit !== undefined) query.set('limit', String(params.limit));
    if (params.cursor) query.set('cursor', params.cursor);
    const qs = query.toString();
    return this.call('GET', `/jobs${qs ? `?${qs}` : ''}`, jobsPage);
  }

  /**
   * The page that a `nextCursor` names. The spec does not show how a cursor
   * is passed back: a link (a URL or a path, which must stay on the service)
   * is followed as it is, a query fragment (`after=…`) is appended, and a bare
   * token goes as `cursor`.
   */
  listJobsAfter(cursor: string, params: { type?: MediaType; limit?: number } = {}): Promise<JobsPage> {
    const link = /^https?:\/\//i.test(cursor)
      ? new URL(cursor)
      : cursor.startsWith('/')
        ? new URL(cursor, this.base.origin)
        : undefined;
    if (link) {
      if (link.origin !== this.base.origin)
        throw new ResponseShapeError(
          `the job list's nextCursor points to another host (${link.origin}); it is not followed`,
          'GET',
          '/jobs',
        );
      const path = link.pathname.startsWith(this.base.pathname)
        ? link.pathname.slice(this.base.pathname.length)
        : link.pathname;
      return this.call('GET', `${path.startsWith('/') ? path : `/${path}`}${link.search}`, jobsPage);
    }
    const query = new URLSearchParams();
    if (params.type) query.set('type', params.type);
    if (params.limit !== undefined) query.set('limit', String(params.limit));
    const fragment = /^[A-Za-z_][\w.-]*=/.test(cursor)
      ? cursor.replace(/^\?/, '')
      : `cursor=${encodeURIComponent(cursor)}`;
    const qs = query.toString();
    return this.call('GET', `/jobs?${qs ? `${qs}&` : ''}${fragment}`, jobsPage);
  }

  async *allJobs(params: { type?: MediaType; limit?: number } = {}): AsyncGenerator<Job> {
    let cursor: string | undefined;
    do {
      const page = await (cursor ? this.listJobsAfter(cursor, params) : this.listJobs(params));
      yield* page.jobs;
      cursor = page.nextCursor;
    } while (cursor);
  }

  /**
   * Step 2 of an upload: PUT the bytes to the presigned URL with exactly the
   * granted Content-Type. With `idleTimeoutMs`, a body that storage stops taking, or
   * an answer that does not come, for that long ends the transfer with a
   * TransportError of code STALLED.
   */
  async putUpload(
    uploadUrl: string,
    body: Buffer | Readable,
    contentType: string,
    size: number,
    idleTimeoutMs?: number,
  ): Promise<void> {
    const where = describeStorageUrl(uploadUrl);
    const idle = idleTimeoutMs === undefined ? undefined : new IdleWatch(idleTimeoutMs);
    try {
      const res = await this.send(uploadUrl, 'PUT', where, {
        headers: { 'content-type': contentType, 'content-length': String(size) },
        body: idle && !Buffer.isBuffer(body) ? Readable.from(idle.watch(body)) : body,
        headersTimeout: idleTimeoutMs ?? this.timeoutMs * 4,
        ...(idleTimeoutMs !== undefined ? { bodyTimeout: idleTimeoutMs } : {}),
        ...(idle ? { signal: idle.signal } : {}),
      });
      const text = await res.body.text();
      if (res.statusCode < 200 || res.statusCode >= 300)
        throw storageError(res.statusCode, text, `PUT ${where}`, 'upload', this.secrets());
    } catch (error) {
      if (!idle?.signal.aborted) throw error;
      throw new TransportError(
        'STALLED',
        `PUT ${where}: the upload stalled: no byte moved for ${idleTimeoutMs! / 1000} s`,
        'PUT',
        where,
        {
          cause: error,
        },
      );
    } finally {
      idle?.stop();
    }
  }

  /**
   * Opens an output link; the caller must consume or destroy the body. With
   * `idleTimeoutMs`, headers that do not come, or a body that moves no byte, for that
   * long end the transfer (a stalled one would otherwise hold it for undici's
   * default of five minutes).
   */
  async download(url: string, signal?: AbortSignal, idleTimeoutMs?: number): Promise<Download> {
    if (!/^https?:\/\//i.test(url))
      throw new StorageError(0, undefined, 'An output link is not an http(s) URL.', 'download');
    const where = describeStorageUrl(url);
    const res = await this.send(url, 'GET', where, {
      ...(signal ? { signal } : {}),
      ...(idleTimeoutMs !== undefined ? { headersTimeout: idleTimeoutMs, bodyTimeout: idleTimeoutMs } : {}),
    });
    if (res.statusCode < 200 || res.statusCode >= 300) {
      const text = await res.body.text().catch(() => '');
      throw storageError(res.statusCode, text, `GET ${where}`, 'download', this.secrets());
    }
    const length = Number(header(res.headers, 'content-length'));
    const contentType = header(res.headers, 'content-type');
    return {
      body: res.body,
      cancel: () => {
        res.body.on('error', () => {});
        res.body.destroy();
      },
      ...(Number.isFinite(length) && header(res.headers, 'content-length') !== undefined
        ? { contentLength: length }
        : {}),
      ...(contentType ? { contentType } : {}),
    };
  }

  async close(): Promise<void> {
    if (this.ownsDispatcher) await this.dispatcher.close();
  }

  private secrets(): string[] {
    return [this.options.apiKey];
  }

  private async call<S extends z.ZodType>(
    method: string,
    path: string,
    schema: S,
    options: {
      body?: unknown;
      idempotencyKey?: string;
      timeoutMs?: number;
      waitMs?: number;
      signal?: AbortSignal;
    } = {},
  ): Promise<z.output<S>> {
    const request = this.track(options.waitMs ?? 0, options.signal);
    try {
      return await this.callOnce(method, path, schema, { ...options, signal: request.controller.signal });
    } catch (error) {
      if (!request.abandoned || options.signal?.aborted) throw error;
      const where = `${this.base.pathname}${path}`;
      throw new TransportError(
        'ABANDONED',
        `${method} ${where}: no answer, and the service answers other requests again: given up, to be sent again`,
        method,
        where,
        { cause: error },
      );
    } finally {
      this.outstanding.delete(request);
      request.stop();
    }
  }

  /** A request under way, aborted by its caller's signal or by abandonSentBefore. */
  private track(waitMs: number, signal: AbortSignal | undefined): Outstanding & { stop(): void } {
    const controller = new AbortController();
    const onAbort = () => controller.abort(signal?.reason);
    if (signal?.aborted) controller.abort(signal.reason);
    else signal?.addEventListener('abort', onAbort, { once: true });
    const request = {
      sentAt: this.now(),
      waitMs,
      controller,
      abandoned: false,
      stop: () => signal?.removeEventListener('abort', onAbort),
    };
    this.outstanding.add(request);
    return request;
  }

  private async callOnce<S extends z.ZodType>(
    method: string,
    path: string,
    schema: S,
    options: { body?: unknown; idempotencyKey?: string; timeoutMs?: number; signal: AbortSignal },
  ): Promise<z.output<S>> {
    const url = `${this.base.href}${path}`;
    const logPath = `${this.base.pathname}${path}`;
    const headers: Record<string, string> = {
      authorization: `Bearer ${this.options.apiKey}`,
      accept: 'application/json',
    };
    if (options.body !== undefined) headers['content-type'] = 'application/json';
    if (options.idempotencyKey) headers['idempotency-key'] = options.idempotencyKey;
    const timeout = options.timeoutMs ?? this.timeoutMs;
    const started = this.now();
    const res = await this.send(url, method, logPath, {
      headers,
      ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
      headersTimeout: timeout,
      bodyTimeout: timeout,
      signal: options.signal,
    }).catch((error: unknown) => {
      throw this.firstContact.judge(error, method);
    });
    const answer = answerOf(method, path, res);
    // The body is always read, also for 429/503: an unread body pins the connection.
    // Cut off mid-body, the answer was not had: a submission may have been accepted all the same (the service answered, though).
    const text = await res.body.text().catch((error: unknown) => {
      this.answers.emit({ ...answer, ms: this.now() - started });
      if (options.signal.aborted) throw error;
      throw transportError(error, method, logPath, this.secrets());
    });
    answer.ms = this.now() - started;
    this.options.logger?.debug({ method, path: logPath, status: res.statusCode, ms: answer.ms }, 'api request');
    if (res.statusCode < 200 || res.statusCode >= 300) {
      const error = apiErrorFrom({
        status: res.statusCode,
        headers: res.headers,
        bodyText: text,
        method,
        path: logPath,
        secrets: this.secrets(),
        now: this.now(),
      });
      this.answers.emit({
        ...answer,
        code: error.code,
        ...(error.retryAfterMs !== undefined ? { retryAfterMs: error.retryAfterMs } : {}),
      });
      throw this.firstContact.judge(error, method);
    }
    this.answers.emit(answer);
    try {
      const parsed = this.parse(schema, text, method, logPath);
      this.firstContact.seen();
      return parsed;
    } catch (error) {
      // JSON of another shape may be the service's variant; a page that is not JSON is another server's.
      const page = error instanceof ResponseShapeError && !isJson(text);
      const type = header(res.headers, 'content-type')?.split(';')[0]?.trim();
      throw page ? this.firstContact.judge(error, method, { status: res.statusCode, contentType: type }) : error;
    }
  }

  /** A 2xx answer's body as the schema reads it; anything else is a ResponseShapeError (a submission's may have been accepted). */
  private parse<S extends z.ZodType>(schema: S, text: string, method: string, logPath: string): z.output<S> {
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw new ResponseShapeError(`${method} ${logPath}: the answer is not JSON`, method, logPath);
    }
    const parsed = schema.safeParse(json);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const where = issue?.path.length ? ` at ${issue.path.join('.')}` : '';
      const message = scrubSecrets(
        `${method} ${logPath}: unexpected answer${where}: ${issue?.message ?? 'invalid'}`,
        this.secrets(),
      );
      throw new ResponseShapeError(message, method, logPath);
    }
    return parsed.data;
  }

  private async send(
    url: string,
    method: string,
    where: string,
    options: Omit<Dispatcher.RequestOptions, 'origin' | 'path' | 'method' | 'signal'> & { signal?: AbortSignal },
  ): Promise<Dispatcher.ResponseData> {
    try {
      return await request(this.dispatcher, url, { ...options, method: method as Dispatcher.HttpMethod });
    } catch (error) {
      if (options.signal?.aborted) throw error;
      throw transportError(error, method, where, this.secrets());
    }
  }
}

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}
