import { readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { SimResponse } from '../../src/simulator/types.js';
import type { StorageFault } from '../../src/simulator/types.js';
import type { LedgerEvent, SimulatorOptions } from '../../src/simulator/index.js';
import {
  expectNoDoubleChargeAndVerifiedOutputs,
  imageManifest,
  readState,
  workspace,
  type RunWorkspace,
} from '../helpers/run.js';
import { startTestSim, type TestSim } from '../helpers/sim.js';

type Request = Extract<LedgerEvent, { kind: 'request' }>;

const error = (status: number, code: string, headers: Record<string, string> = {}): SimResponse => ({
  status,
  headers,
  body: { error: { code, message: `injected ${code}` } },
});

interface Row {
  name: string;
  /** What the runner must do. */
  behaviour:
    | 'resend same key'
    | 'new attempt'
    | 'wait and resend'
    | 'mark item'
    | 'stop the item, pay nothing more'
    | 'stop run'
    | 'refresh link';
  sim?: SimulatorOptions;
  prompt?: string;
  args?: string[];
  /** Answers for the first POST /images, in order (then the service answers). */
  posts?: (SimResponse | 'reset')[];
  /** What the client receives instead of the service's answer to the first POSTs /images (the job was created). */
  tampered?: SimResponse[];
  downloads?: StorageFault[];
  exit: number;
  check: (t: TestSim, ws: RunWorkspace, posts: Request[]) => void;
}

const sameKey = (posts: Request[]) => expect(new Set(posts.map((p) => p.idempotencyKey)).size).toBe(1);
const statuses = (posts: Request[]) => posts.map((p) => p.status);
const charges = (t: TestSim) => t.sim.service.ledger.of('charge').length;
const itemState = (ws: RunWorkspace) => readState(ws.statePath).items[0]!;

const resentWithSameKey = (first: number) => (t: TestSim, _ws: RunWorkspace, posts: Request[]) => {
  expect(statuses(posts)).toEqual([first, 202]);
  sameKey(posts);
  expect(charges(t)).toBe(1);
};

const stops = (code: string): Row => ({
  name: `${code} on submission`,
  behaviour: 'stop run',
  posts: [error(code === 'UNAUTHENTICATED' ? 401 : code === 'CREDITS_EXHAUSTED' ? 402 : 403, code)],
  exit: 3,
  check: (t, ws, posts) => {
    expect(statuses(posts)).toEqual([code === 'UNAUTHENTICATED' ? 401 : code === 'CREDITS_EXHAUSTED' ? 402 : 403]);
    expect(charges(t)).toBe(0);
    expect(itemState(ws).state).toBe('pending'); // resumable once the cause is mended
  },
});

const rows: Row[] = [
  {
    name: 'RATE_LIMITED',
    behaviour: 'wait and resend',
    posts: [error(429, 'RATE_LIMITED', { 'Retry-After': '1', 'X-RateLimit-Remaining': '0' })],
    exit: 0,
    check: resentWithSameKey(429),
  },
  {
    name: 'CONCURRENCY_LIMIT',
    behaviour: 'wait and resend',
    posts: [error(429, 'CONCURRENCY_LIMIT', { 'Retry-After': '1' })],
    exit: 0,
    check: resentWithSameKey(429),
  },
  {
    name: 'DAILY_CAP_REACHED',
    behaviour: 'wait and resend',
    posts: [error(429, 'DAILY_CAP_REACHED', { 'Retry-After': '1' })],
    exit: 0,
    check: resentWithSameKey(429),
  },
  {
    name: '429 with Retry-After missing',
    behaviour: 'wait and resend',
    posts: [error(429, 'RATE_LIMITED')],
    exit: 0,
    check: resentWithSameKey(429),
  },
  {
    name: '429 with Retry-After malformed',
    behaviour: 'wait and resend',
    posts: [error(429, 'RATE_LIMITED', { 'Retry-After': 'soon', 'X-RateLimit-Remaining': 'none' })],
    exit: 0,
    check: resentWithSameKey(429),
  },
  {
    name: 'MODERATION_UNAVAILABLE',
    behaviour: 'resend same key',
    posts: [error(503, 'MODERATION_UNAVAILABLE')],
    exit: 0,
    check: resentWithSameKey(503),
  },
  {
    name: 'UPSTREAM_UNAVAILABLE',
    behaviour: 'resend same key',
    posts: [error(503, 'UPSTREAM_UNAVAILABLE')],
    exit: 0,
    check: resentWithSameKey(503),
  },
  {
    name: '503 twice: resent once only, then the item fails',
    behaviour: 'mark item',
    posts: [error(503, 'UPSTREAM_UNAVAILABLE'), error(503, 'UPSTREAM_UNAVAILABLE')],
    exit: 1,
    check: (t, ws, posts) => {
      expect(statuses(posts)).toEqual([503, 503]);
      sameKey(posts);
      expect(charges(t)).toBe(0);
      expect(itemState(ws)).toMatchObject({ state: 'failed', error_code: 'UPSTREAM_UNAVAILABLE' });
    },
  },
  {
    // The one retry a 503 gets is its own: resends after network errors do not use it up.
    name: 'resets, then a 503: the 503 is still retried once',
    behaviour: 'resend same key',
    posts: ['reset', 'reset', error(503, 'UPSTREAM_UNAVAILABLE')],
    exit: 0,
    check: (t, _ws, posts) => {
      expect(statuses(posts)).toEqual([0, 0, 503, 202]);
      sameKey(posts);
      expect(charges(t)).toBe(1);
    },
  },
  {
    name: 'VALIDATION_ERROR',
    behaviour: 'mark item',
    posts: [
      {
        status: 400,
        headers: {},
        body: { error: { code: 'VALIDATION_ERROR', message: 'bad', details: { field: 'prompt' } } },
      },
    ],
    exit: 1,
    check: (t, ws, posts) => {
      expect(statuses(posts)).toEqual([400]);
      expect(charges(t)).toBe(0);
      expect(itemState(ws)).toMatchObject({ state: 'rejected', error_code: 'VALIDATION_ERROR' });
    },
  },
  stops('UNAUTHENTICATED'),
  stops('CREDITS_EXHAUSTED'),
  stops('SCOPE_DENIED'),
  stops('API_NOT_ELIGIBLE'),
  stops('API_DISABLED'),
  stops('ACCOUNT_SUSPENDED'),
  {
    name: 'IDEMPOTENCY_IN_FLIGHT',
    behaviour: 'resend same key',
    posts: [error(409, 'IDEMPOTENCY_IN_FLIGHT', { 'Retry-After': '1' })],
    exit: 0,
    check: resentWithSameKey(409),
  },
  ...['IDEMPOTENCY_KEY_REUSED', 'IDEMPOTENCY_KEY_EXPIRED'].map(
    (code): Row => ({
      // A job may exist under that key: a new key on its own could pay twice.
      name: `${code} 40 times`,
      behaviour: 'stop the item, pay nothing more',
      posts: Array.from({ length: 40 }, () => error(409, code)),
      exit: 1,
      check: (t, ws, posts) => {
        expect(statuses(posts)).toEqual([409]);
        expect(charges(t)).toBe(0);
        expect(readState(ws.statePath).attempts.map((a) => a.status)).toEqual(['conflict']);
        expect(itemState(ws)).toMatchObject({ state: 'failed', error_code: code });
      },
    }),
  ),
  {
    name: 'a 202 whose body cannot be read (the job was created)',
    behaviour: 'resend same key',
    tampered: [{ status: 202, headers: {}, body: {} }],
    exit: 0,
    check: (t, _ws, posts) => {
      expect(statuses(posts)).toEqual([202, 202]);
      sameKey(posts);
      expect(charges(t)).toBe(1);
      expect(t.sim.service.ledger.of('replay')).toHaveLength(1);
    },
  },
  {
    name: 'a 202 whose job has no id',
    behaviour: 'resend same key',
    tampered: [{ status: 202, headers: {}, body: { job: { status: 'QUEUED' } } }],
    exit: 0,
    check: (t, _ws, posts) => {
      expect(statuses(posts)).toEqual([202, 202]);
      sameKey(posts);
      expect(charges(t)).toBe(1);
    },
  },
  {
    name: 'a 502 after the job was created',
    behaviour: 'resend same key',
    tampered: [error(502, 'BAD_GATEWAY')],
    exit: 0,
    check: (t, _ws, posts) => {
      expect(statuses(posts)).toEqual([502, 202]);
      sameKey(posts);
      expect(charges(t)).toBe(1);
    },
  },
  {
    name: 'CONTENT_VIOLATION',
    behaviour: 'mark item',
    prompt: 'x [sim:block]',
    exit: 1,
    check: (t, ws, posts) => {
      expect(statuses(posts)).toEqual([422]);
      expect(charges(t)).toBe(0);
      expect(itemState(ws)).toMatchObject({ state: 'blocked', error_code: 'CONTENT_VIOLATION' });
    },
  },
  ...(['FAILED', 'EXPIRED'] as const).map(
    (end): Row => ({
      name: `job ends ${end}`,
      behaviour: 'new attempt',
      prompt: `x [sim:${end === 'FAILED' ? 'fail' : 'expire'}]`,
      args: ['--max-retries', '1'],
      exit: 1,
      check: (t, ws, posts) => {
        expect(statuses(posts)).toEqual([202, 202]);
        expect(new Set(posts.map((p) => p.idempotencyKey)).size).toBe(2);
        expect(t.sim.service.ledger.of('refund').map((r) => r.status)).toEqual([end, end]);
        expect(itemState(ws).state).toBe('failed');
      },
    }),
  ),
  {
    name: 'connection reset before the response (nothing created)',
    behaviour: 'resend same key',
    posts: ['reset'],
    exit: 0,
    check: resentWithSameKey(0),
  },
  {
    name: 'response dropped after the job was created',
    behaviour: 'resend same key',
    prompt: 'x [sim:drop]',
    exit: 0,
    check: (t, _ws, posts) => {
      expect(statuses(posts)).toEqual([0, 202]);
      sameKey(posts);
      expect(charges(t)).toBe(1);
      expect(t.sim.service.ledger.of('replay')).toHaveLength(1);
    },
  },
  {
    name: 'a slow output body',
    behaviour: 'refresh link',
    downloads: ['slow'],
    exit: 0,
    check: (t) => expect(t.sim.service.ledger.of('download').map((d) => d.status)).toEqual([200]),
  },
  {
    name: 'a truncated download',
    behaviour: 'refresh link',
    downloads: ['truncate'],
    exit: 0,
    check: (t) => expect(t.sim.service.ledger.of('download')).toHaveLength(2),
  },
  {
    name: 'an expired output link',
    behaviour: 'refresh link',
    prompt: 'x [sim:expired-link]',
    exit: 0,
    check: (t) => expect(t.sim.service.ledger.of('download').map((d) => d.status)).toEqual([403, 200]),
  },
  {
    name: 'a 403 from storage',
    behaviour: 'refresh link',
    downloads: ['forbidden'],
    exit: 0,
    check: (t) => expect(t.sim.service.ledger.of('download').map((d) => d.status)).toEqual([403, 200]),
  },
];

// The rows run the run command in this process (38 runs: a Node start-up each would cost half a minute of
// the suite's CPU); the last two tests run the built CLI, as a user does.
describe('the fault matrix: each fault, the runner’s behaviour, and the ledger', () => {
  it.each(rows.map((r) => [`${r.name} → ${r.behaviour}`, r] as const))('%s', async (_name, row) => {
    const t = await startTestSim({ timeScale: 600, ...row.sim });
    const posts = [...(row.posts ?? [])];
    t.sim.service.inject = (req, seen) =>
      req.method === 'POST' && req.path === '/images' && seen < posts.length ? posts[seen] : undefined;
    const tampered = [...(row.tampered ?? [])];
    t.sim.service.tamper = (req, _res, seen) =>
      req.method === 'POST' && req.path === '/images' && seen < tampered.length ? tampered[seen] : undefined;
    const downloads = [...(row.downloads ?? [])];
    t.sim.storage.inject = (_path, seen) => downloads[seen];
    const ws = workspace(
      t.sim,
      imageManifest(1, () => row.prompt ?? 'a mug'),
    );
    const res = await ws.run(row.args);
    expect(res.code, res.stdout + res.stderr).toBe(row.exit);
    expect(res.stdout + res.stderr).not.toContain(t.sim.apiKey);
    const seenPosts = t.sim.service.ledger.of('request').filter((r) => r.method === 'POST' && r.path === '/images');
    row.check(t, ws, seenPosts);
    expectNoDoubleChargeAndVerifiedOutputs(t.sim, ws);
    expect(readdirSync(ws.dir, { recursive: true }).filter((f) => String(f).endsWith('.part'))).toEqual([]);
    if (row.exit === 3) {
      // Mended: the same command finishes, with one charge.
      t.sim.service.inject = undefined;
      expect((await ws.run()).code).toBe(0);
      expect(charges(t)).toBe(1);
      expectNoDoubleChargeAndVerifiedOutputs(t.sim, ws);
    }
  });

  it('the service’s daily cap, lower than the run was told, reached mid-run: waits for the reset and goes on', async () => {
    // A key day lasts 2 s; the service's cap is 6 credits (3 jobs), the runner believes 20,000 (/me does not show it).
    const t = await startTestSim({
      timeScale: 43_200,
      keys: [{ label: 'main', dailyCap: 6 }],
      linkTtlSeconds: 7 * 86_400,
      meShowsLimits: false,
    });
    // Links live a week of service time (14 s here): at this scale the usual 15 minutes are 21 ms, which a busy machine misses.
    const ws = workspace(t.sim, imageManifest(5), {}, 43_200);
    const res = await ws.run();
    expect(res.code, res.stdout).toBe(0);
    const capped = t.sim.service.ledger.of('request').filter((r) => r.code === 'DAILY_CAP_REACHED');
    expect(capped.length).toBeGreaterThan(0);
    expect(charges(t)).toBe(5);
    expectNoDoubleChargeAndVerifiedOutputs(t.sim, ws);
  });

  it('X-RateLimit-Remaining reaching 0 never turns into a 429 in a paced run', async () => {
    const t = await startTestSim({ timeScale: 60 });
    const ws = workspace(t.sim, imageManifest(25), {}, 60);
    expect((await ws.run()).code).toBe(0);
    expect(t.sim.service.ledger.countStatus(429)).toBe(0);
    expect(charges(t)).toBe(25);
  });
});
