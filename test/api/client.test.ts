import { NotTheServiceError } from '../../src/api/first-contact.js';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import {
  ApiClient,
  ApiError,
  ResponseShapeError,
  TransportError,
  parseRetryAfter,
  policy,
  reactionTo,
} from '../../src/api/index.js';
import { createLogger } from '../../src/log/logger.js';
import { json, startFakeServer } from '../helpers/fake-server.js';
import { newKey, rejection } from '../helpers/sim.js';

const KEY = 'gbk_SuperSecretKeyValue1234567890';

async function clientFor(handler: Parameters<typeof startFakeServer>[0]) {
  const server = await startFakeServer(handler);
  const client = new ApiClient({ baseUrl: server.baseUrl, apiKey: KEY });
  return { client, server };
}

describe('the client tolerates what the spec leaves unshown', () => {
  it.each([
    ['a bare array with slug ids', [{ slug: 'a', kind: 'generate', creditCost: 3 }]],
    ['wrapped as data with model ids', { data: [{ model: 'a', kind: 'generate', creditCost: 3 }] }],
    ['wrapped as models with id', { models: [{ id: 'a', kind: 'generate', creditCost: 3, extra: { x: 1 } }] }],
  ])('a model list as %s', async (_name, body) => {
    const { client } = await clientFor((_req, res) => json(res, 200, body));
    const models = await client.listModels('image');
    expect(models).toMatchObject([{ id: 'a', type: 'image', kind: 'generate', creditCost: 3 }]);
  });

  it('video models with numeric durations and an unknown price field', async () => {
    const { client } = await clientFor((_req, res) =>
      json(res, 200, [
        {
          id: 'v',
          mode: 'image-to-video',
          durations: [5, 10],
          resolutions: ['720p'],
          aspectRatios: ['16:9'],
          pricing: { '720p': 9 },
        },
      ]),
    );
    const [model] = await client.listModels('video');
    expect(model).toMatchObject({ id: 'v', mode: 'image-to-video', durations: ['5', '10'] });
    expect(model!.raw.pricing).toEqual({ '720p': 9 });
  });

  it('a bare job, a wrapped /me, a job page as data with next_cursor, and epoch-second expiries', async () => {
    const { client } = await clientFor((req, res) => {
      if (req.url!.startsWith('/v1/jobs/')) return json(res, 200, { id: 'j1', status: 'QUEUED' });
      if (req.url === '/v1/me')
        return json(res, 200, { me: { credits: 5, scopes: ['image'], limits: { dailyCap: 900 } } });
      if (req.url!.startsWith('/v1/jobs'))
        return json(res, 200, {
          data: [{ id: 'j1', status: 'COMPLETED', outputs: [{ url: 'http://x/a', downloadUrl: 'http://x/b' }] }],
          next_cursor: 'c2',
        });
      return json(res, 200, { uploadUrl: 'http://storage/x', key: 'k', expiresAt: 1_900_000_000 });
    });
    const job = await client.getJob('j1');
    expect(job).toMatchObject({ id: 'j1', status: 'QUEUED', outputs: [], refunded: 0 });
    expect(await client.me()).toMatchObject({ credits: 5, scopes: ['image'], dailyCap: 900 });
    expect(await client.listJobs()).toMatchObject({
      jobs: [{ id: 'j1', outputs: [{ downloadUrl: 'http://x/b' }] }],
      nextCursor: 'c2',
    });
    const grant = await client.createUpload({ kind: 'image', target: 'image', contentType: 'image/png', size: 1 });
    expect(grant.expiresAt!.toISOString()).toBe(new Date(1_900_000_000_000).toISOString());
  });
});

describe('the client is strict on what the spec shows', () => {
  it.each([
    ['a job without an id', { job: { status: 'COMPLETED' } }],
    [
      'an output link that is not http(s)',
      { job: { id: 'j', status: 'COMPLETED', outputs: [{ url: 'http://x', downloadUrl: 'file:///etc/passwd' }] } },
    ],
    ['a refund that is not a number', { job: { id: 'j', status: 'FAILED', credits: { refunded: 'all' } } }],
  ])('rejects %s', async (_name, body) => {
    const { client } = await clientFor((_req, res) => json(res, 200, body));
    const e = await rejection(client.getJob('j'));
    expect(e).toBeInstanceOf(ResponseShapeError);
    expect(reactionTo(e)).toEqual({ do: 'mark-item', as: 'failed' });
  });

  it('rejects a 2xx answer that is not JSON: another server before the service ever answered, else a bad answer', async () => {
    let served = 0;
    const { client } = await clientFor((_req, res) =>
      served++ === 1
        ? json(res, 401, { error: { code: 'UNAUTHORIZED', message: 'no' } })
        : res.end('<html>gateway</html>'),
    );
    expect(await rejection(client.me())).toBeInstanceOf(NotTheServiceError);
    await rejection(client.me());
    expect(await rejection(client.me())).toBeInstanceOf(ResponseShapeError);
  });
});

describe('errors', () => {
  it('carry status, code, details and both limit headers', async () => {
    const { client } = await clientFor((_req, res) =>
      json(
        res,
        429,
        { error: { code: 'RATE_LIMITED', message: 'slow down', details: { field: 'x' } } },
        { 'retry-after': '7', 'x-ratelimit-remaining': '0' },
      ),
    );
    const e = await rejection(client.submitImage({ prompt: 'p', model: 'm' }, newKey()));
    expect(e).toBeInstanceOf(ApiError);
    expect(e).toMatchObject({
      status: 429,
      code: 'RATE_LIMITED',
      details: { field: 'x' },
      retryAfterMs: 7000,
      rateLimitRemaining: 0,
    });
  });

  it('a non-JSON error body still gives a typed error, classified by status', async () => {
    const { client } = await clientFor((_req, res) => {
      res.writeHead(502);
      res.end('Bad Gateway');
    });
    // Before anything answered, a gateway's page is not yet the service: asked again at the start, for a while.
    expect(await rejection(client.me())).toMatchObject({ name: 'NotTheServiceError', transient: true });
    const e = await rejection(client.submitImage({ prompt: 'p', model: 'm' }, newKey()));
    expect(e).toMatchObject({ status: 502, code: 'HTTP_502' });
    expect(reactionTo(e).do).toBe('resend-with-backoff');
  });

  it('a connection reset before the answer is a TransportError: resend with the same key', async () => {
    const { client } = await clientFor((req) => req.socket.destroy());
    const e = await rejection(client.submitImage({ prompt: 'p', model: 'm' }, newKey()));
    expect(e).toBeInstanceOf(TransportError);
    expect(reactionTo(e)).toEqual({ do: 'resend-with-backoff', maxResends: 8, baseMs: 500 });
  });

  it.each([
    [{ status: 409, code: 'IDEMPOTENCY_KEY_EXPIRED' }, 'key-conflict'],
    [{ status: 429, code: 'SOMETHING_NEW' }, 'wait-and-resend'],
    [{ status: 403, code: 'KEY_PAUSED' }, 'stop-run'],
    [{ status: 500, code: 'INTERNAL' }, 'resend-with-backoff'],
    [{ status: 404, code: 'NOT_FOUND' }, 'mark-item'],
  ])('an unlisted code %j is classified by family and status', (e, action) => {
    const error = new ApiError(e.status, e.code, 'm', {}, undefined, undefined, 'GET', '/x');
    expect(reactionTo(error).do).toBe(action);
  });

  it.each([
    ['submit', new ResponseShapeError('unreadable 202', 'POST', '/images'), 'resend-with-backoff'],
    ['read-job', new ResponseShapeError('cut body', 'GET', '/jobs/j'), 'resend-with-backoff'],
    ['read-job', new ApiError(403, 'FORBIDDEN', 'not yours', {}, undefined, undefined, 'GET', '/jobs/j'), 'keep-job'],
    ['read-job', new ApiError(404, 'NOT_FOUND', 'gone', {}, undefined, undefined, 'GET', '/jobs/j'), 'keep-job'],
    ['read-job', new ApiError(403, 'SCOPE_DENIED', 'no scope', {}, undefined, undefined, 'GET', '/jobs/j'), 'stop-run'],
    [
      'read-job',
      new ApiError(401, 'UNAUTHENTICATED', 'no key', {}, undefined, undefined, 'GET', '/jobs/j'),
      'stop-run',
    ],
    [
      'read-job',
      new ApiError(
        400,
        'VALIDATION_ERROR',
        'wait too long',
        { field: 'wait', max: 10 },
        undefined,
        undefined,
        'GET',
        '/jobs/j',
      ),
      'adapt-wait',
    ],
    [
      'submit',
      new ApiError(409, 'IDEMPOTENCY_KEY_REUSED', 'other body', {}, undefined, undefined, 'POST', '/images'),
      'key-conflict',
    ],
  ] as const)('per operation: %s after %s → %s', (operation, error, action) => {
    expect(policy(operation, error).do).toBe(action);
  });

  it.each([
    ['3', 3000],
    ['1.5', 1500],
    ['0', 0],
    ['-1', undefined],
    ['soon', undefined],
    ['', undefined],
    [undefined, undefined],
  ])('Retry-After %j is %j ms', (value, ms) => {
    expect(parseRetryAfter(value, 0)).toBe(ms);
  });

  it('Retry-After as an HTTP date', () => {
    const now = Date.parse('2026-11-22T10:00:00Z');
    expect(parseRetryAfter('Sun, 22 Nov 2026 10:00:30 GMT', now)).toBe(30_000);
  });
});

describe('the API key never leaves the process', () => {
  it('is not in an error even when the server echoes it back', async () => {
    const { client, server } = await clientFor((req, res) => {
      const auth = req.headers.authorization ?? '';
      json(res, 400, {
        error: { code: 'VALIDATION_ERROR', message: `bad key ${auth}`, details: { field: auth, allowed: [auth] } },
      });
    });
    const e = await rejection(client.me());
    expect(server.requests[0]!.headers.authorization).toBe(`Bearer ${KEY}`);
    const everything = JSON.stringify({ message: e.message, details: e.details, code: e.code, stack: e.stack });
    expect(everything).toContain('[REDACTED]');
    expect(everything).not.toContain(KEY);
  });

  it('is not in a log line, whatever shape carries it', () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _enc, done) {
        lines.push(String(chunk));
        done();
      },
    });
    const log = createLogger({ secrets: [KEY], destination: sink, level: 'debug' });
    log.info({ apiKey: KEY, headers: { authorization: `Bearer ${KEY}` } }, 'request');
    log.error(new Error(`failed with ${KEY}`), `message ${KEY}`);
    log.debug({ nested: { deep: [`x${KEY}y`] }, url: `http://h/?key=${KEY}` });
    expect(lines).toHaveLength(3);
    for (const line of lines) expect(line).not.toContain(KEY);
    expect(lines.join('')).toContain('[REDACTED]');
  });
});
