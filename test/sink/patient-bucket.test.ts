import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, type Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import { describe, expect, it } from 'vitest';
import { classify as asStoreError } from '../../src/sink/bucket/bucket-policy.js';
import { BucketError, PatientBucket, type BucketTrouble, type BucketCall } from '../../src/sink/index.js';
import type { ByteRange } from '../../src/sink/sink.js';
import { FakeBucket } from '../helpers/fake-bucket.js';

const FAST = { idleTimeoutMs: 100, unreachableMs: 5_000 };
/** A real bucket's backoffs, 200 ms doubling to 15 s, each its full length (no jitter). */
const REAL_BACKOFFS = {
  idleTimeoutMs: 10_000,
  unreachableMs: 60_000,
  backoff: { firstMs: 200, longestMs: 15_000 },
  random: () => 1,
};

/** An error as the AWS SDK throws it, classed as the S3 store classes it. */
function sdk(name: string, status?: number, code?: string): BucketError {
  const raw = Object.assign(new Error(`${name} said`), { name, ...(code ? { code } : {}) });
  return asStoreError(Object.assign(raw, { $metadata: { httpStatusCode: status } }), 'PUT s3://catalog/x');
}

/** Every way a real bucket fails a call and waiting mends it. */
const PASSING = {
  'a 503 SlowDown': () => sdk('SlowDown', 503),
  'a 500': () => sdk('InternalError', 500),
  'a 429': () => sdk('TooManyRequests', 429),
  'a refused connection': () => sdk('Error', undefined, 'ECONNREFUSED'),
  'a reset connection': () => sdk('Error', undefined, 'ECONNRESET'),
};

function source(): { path: string; bytes: number; sha256: string; contentType: string } {
  const path = join(mkdtempSync(join(tmpdir(), 'genbatch-patient-')), 'a.png');
  writeFileSync(path, 'png bytes');
  return { path, bytes: 9, sha256: 'f'.repeat(64), contentType: 'image/png' };
}

describe('every bucket call rides out the faults that pass', () => {
  for (const [how, fault] of Object.entries(PASSING))
    it(`${how}: backed off and sent again, once per fault, and the trouble is said begun and ended`, async () => {
      const bucket = new FakeBucket();
      let calls = 0;
      let looks = 0;
      bucket.fault = (op) => {
        if (op === 'head') looks++;
        if (op !== 'putNew') return undefined;
        return ++calls <= 2 ? fault() : undefined;
      };
      // Backoffs of tens of ms: the put is through long before a look for the bucket's return (every 500 ms) goes.
      const store = new PatientBucket(bucket, { ...FAST, backoff: { firstMs: 20, longestMs: 40 } });
      const said: (BucketTrouble | undefined)[] = [];
      store.watch((t) => said.push(t));
      expect(await store.putNew('spring/a.png', source())).toBe('created');
      expect(calls).toBe(3);
      // Each resend of a create-only put looks first: the lost answer of one that landed is not put again.
      expect(looks).toBe(2);
      expect(bucket.puts).toEqual(['spring/a.png']);
      expect(said).toHaveLength(3);
      expect(said[0]!.givesUpAt - said[0]!.since).toBe(FAST.unreachableMs);
      expect(said.at(-1)).toBeUndefined();
      expect(store.trouble).toBeUndefined();
    });

  it("back-to-back outages: a call asleep in its backoff goes at the bucket's first answer, not at its backoff's end", async () => {
    const bucket = new FakeBucket();
    let refusing = true;
    let tries = 0;
    // An outage: every request is refused (the store's own looks for the return too).
    bucket.fault = (op, key) => {
      if (key === 'spring/a.png' && op === 'putReplace') tries++;
      return refusing ? { fault: 'unreachable', code: 'ECONNREFUSED' } : undefined;
    };
    const store = new PatientBucket(bucket, REAL_BACKOFFS);
    // A put that replaces: each try is the put itself (a create-only put's resends look first).
    const put = store.putReplace('spring/a.png', source());
    // Five refusals: the put now sleeps 2 s (the cap while nothing answers; 3.2 s, then 6.4 s and 15 s, uncapped).
    while (tries < 5) await new Promise((r) => setTimeout(r, 10));
    refusing = false;
    await new Promise((r) => setTimeout(r, 50));
    const back = Date.now();
    // Any other call the bucket answers ends the outage for every call.
    expect(await store.head('spring/other.png')).toBeUndefined();
    await put;
    expect(Date.now() - back).toBeLessThan(1_000);
    expect(tries).toBe(6);
  });

  it("a SlowDown just after an outage backs off from the start, not from the outage's count of tries", async () => {
    const bucket = new FakeBucket();
    const outcomes: ('refuse' | 'slow' | 'ok')[] = ['refuse', 'refuse', 'refuse', 'refuse', 'refuse', 'slow', 'ok'];
    const at: number[] = [];
    bucket.fault = (op, key) => {
      if (key !== 'spring/a.png' || op !== 'putNew') return undefined;
      at.push(Date.now());
      const next = outcomes.shift();
      if (next === 'refuse') return { fault: 'unreachable', code: 'ECONNREFUSED' };
      if (next === 'slow') return { fault: 'slow-down', code: 'SlowDown' };
      return undefined;
    };
    const store = new PatientBucket(bucket, REAL_BACKOFFS);
    const put = store.putNew('spring/a.png', source());
    while (at.length < 5) await new Promise((r) => setTimeout(r, 10));
    // The bucket is back: another call's answer wakes the put, whose resend is told to slow down.
    expect(await store.head('spring/other.png')).toBeUndefined();
    expect(await put).toBe('created');
    // Its backoff after that SlowDown is the first step's (200 ms), not 2^6 steps' (15 s).
    expect(at[6]! - at[5]!).toBeLessThan(1_000);
  });

  it('a call sent into a silent bucket is sent again as soon as another call is answered, not at its idle timeout', async () => {
    const bucket = new FakeBucket();
    let silent = true;
    bucket.fault = (op, key) => (silent && op === 'head' && key === 'spring/a.png' ? 'silent' : undefined);
    const store = new PatientBucket(bucket, { idleTimeoutMs: 30_000, unreachableMs: 60_000 });
    // A call has failed for want of an answer: the bucket is in trouble.
    let refused = 0;
    const before = bucket.fault;
    bucket.fault = (op, key) =>
      op === 'delete' && refused++ === 0 ? { fault: 'unreachable', code: 'ECONNRESET' } : before(op, key);
    const swallowed = store.head('spring/a.png');
    // Stuck for over a second (one in flight for less may be landing: it is left to finish).
    await new Promise((r) => setTimeout(r, 1_100));
    await store.delete('spring/x');
    silent = false;
    const back = Date.now();
    // The delete's resend was answered after the head was sent: the head, swallowed, is sent again at once.
    expect(await swallowed).toBeUndefined();
    expect(Date.now() - back).toBeLessThan(5_000);
    expect(bucket.abandoned).toBe(1);
  });

  it('a lone call waiting out a silent bucket sees its return within about a second, though no other call asks', async () => {
    const bucket = new FakeBucket();
    let silent = true;
    let tries = 0;
    let probes = 0;
    bucket.fault = (op) => {
      if (op === 'putReplace') tries++;
      else if (op === 'head' && silent) probes++;
      return silent ? 'silent' : undefined;
    };
    // The chaos bench's pace: a silent request is given up after a second, the backoffs are a real bucket's.
    const store = new PatientBucket(bucket, { ...REAL_BACKOFFS, idleTimeoutMs: 1_000 });
    // A put that replaces (the results, the gallery): each try is the put itself, never a look first.
    const put = store.putReplace('spring/results.jsonl', source());
    // The bucket comes back while the put's third try hangs in the silence, sent just before.
    while (tries < 3) await new Promise((r) => setTimeout(r, 10));
    await new Promise((r) => setTimeout(r, 100));
    silent = false;
    const back = Date.now();
    await put;
    // The try sent into the silence is given up at its idle timeout and sent again at once (its backoff would be
    // 0.8 s more): the put lands about 0.9 s after the return, not 1.7 s.
    expect(Date.now() - back).toBeLessThan(1_300);
    // The store looked for the bucket's return itself while the put hung or slept: a cheap look at a key it used.
    expect(probes).toBeGreaterThan(0);
  });

  it('no look for the return goes once nothing waits on the bucket, nor once the store is abandoned', async () => {
    const bucket = new FakeBucket();
    let looks = 0;
    bucket.fault = (op) => {
      if (op === 'head') looks++;
      return { fault: 'unreachable', code: 'ECONNREFUSED' };
    };
    const store = new PatientBucket(bucket, { idleTimeoutMs: 1_000, unreachableMs: 60_000 });
    const put = store.putNew('spring/a.png', source()).catch((e: unknown) => e as BucketError);
    while (looks < 2) await new Promise((r) => setTimeout(r, 10));
    store.abandon('interrupted');
    expect(((await put) as BucketError).code).toBe('ABANDONED');
    const after = looks;
    await new Promise((r) => setTimeout(r, 1_500));
    expect(looks).toBe(after);
  });

  it('a write in flight while the bucket only slows down is never given up when it answers again', async () => {
    const bucket = new FakeBucket();
    // As s3rver and some stores do: a second put of a key lands over the first.
    bucket.honoursIfNoneMatch = false;
    let release: () => void = () => {};
    const landing = new Promise<void>((r) => (release = r));
    let slowed = 0;
    bucket.fault = (op, key) =>
      op === 'putNew' && key === 'spring/b.png' && slowed++ === 0
        ? { fault: 'slow-down', code: 'SlowDown' }
        : undefined;
    const store = new PatientBucket(bucket, { idleTimeoutMs: 10_000, unreachableMs: 60_000 });
    // A put that takes its time to land (a big object): its bytes are on their way, no progress said for 1.5 s.
    const inner = bucket.putNew.bind(bucket);
    bucket.putNew = async (key, source, call) => {
      if (key === 'spring/a.png') await landing;
      return inner(key, source, call);
    };
    const slow = store.putNew('spring/a.png', source());
    await new Promise((r) => setTimeout(r, 1_500));
    // Another put meets a SlowDown and is then answered: the trouble ends, and the first put is left to land.
    expect(await store.putNew('spring/b.png', source())).toBe('created');
    release();
    expect(await slow).toBe('created');
    expect(bucket.puts.filter((k) => k === 'spring/a.png')).toHaveLength(1);
  });

  it('a request that gets no answer is abandoned after the idle timeout and sent again', async () => {
    const bucket = new FakeBucket();
    await bucket.putNew('spring/a.png', source());
    let calls = 0;
    bucket.fault = (op) => (op === 'head' && ++calls === 1 ? 'silent' : undefined);
    const store = new PatientBucket(bucket, FAST);
    const started = Date.now();
    expect(await store.head('spring/a.png')).toEqual({ size: 9, sha256: 'f'.repeat(64) });
    expect(bucket.abandoned).toBe(1);
    expect(Date.now() - started).toBeGreaterThanOrEqual(FAST.idleTimeoutMs);
  });

  it('an upload whose bytes keep moving is not silent, however long it takes', async () => {
    const ticks: number[] = [];
    const slow = {
      bucket: 'catalog',
      head: async () => undefined,
      get: async () => undefined,
      delete: async () => undefined,
      putReplace: async () => undefined,
      // Five ticks 60 ms apart: 300 ms in all, each gap under the 100 ms idle timeout.
      putNew: async (_key: string, _src: unknown, call?: BucketCall) => {
        for (let i = 0; i < 5; i++) {
          await new Promise((r) => setTimeout(r, 60));
          ticks.push(i);
          call?.progress?.();
        }
        return 'created' as const;
      },
      close: () => {},
    };
    expect(await new PatientBucket(slow, FAST).putNew('k', source())).toBe('created');
    expect(ticks).toHaveLength(5);
  });

  it('a body that goes silent or is cut is taken up from its next byte: the reader gets every byte once', async () => {
    const bytes = Buffer.from(Array.from({ length: 10_000 }, (_, i) => i % 251));
    const asked: (ByteRange | undefined)[] = [];
    let served = 0;
    const flaky = {
      bucket: 'catalog',
      head: async () => ({ size: bytes.length, sha256: undefined }),
      delete: async () => undefined,
      putNew: async () => 'created' as const,
      putReplace: async () => undefined,
      get: async (_key: string, range?: ByteRange) => {
        asked.push(range);
        const from = range?.start ?? 0;
        const body = new PassThrough();
        served++;
        if (served === 1) {
          // 3,000 bytes, then silence.
          body.write(bytes.subarray(from, from + 3_000));
        } else if (served === 2) {
          // 2,000 more, then the connection is cut.
          body.write(bytes.subarray(from, from + 2_000));
          setTimeout(() => body.destroy(Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' })), 20);
        } else body.end(bytes.subarray(from));
        return { size: bytes.length, body: body as Readable };
      },
      close: () => {},
    };
    const got = await new PatientBucket(flaky, FAST).get('spring/v.mp4');
    expect(got?.size).toBe(10_000);
    expect((await buffer(got!.body)).equals(bytes)).toBe(true);
    expect(asked).toEqual([undefined, { start: 3_000, end: 9_999 }, { start: 5_000, end: 9_999 }]);
  });

  it('a slow reader is not a silent body', async () => {
    const bucket = new FakeBucket();
    await bucket.putReplace('r.txt', { ...source(), contentType: 'text/plain' });
    const got = await new PatientBucket(bucket, FAST).get('r.txt');
    await new Promise((r) => setTimeout(r, 250));
    expect((await buffer(got!.body)).toString()).toBe('png bytes');
  });
});

describe('what waiting does not mend is said at once', () => {
  for (const [how, fault, kind] of [
    ['a 403 AccessDenied', () => sdk('AccessDenied', 403), 'denied'],
    ['a wrong signature', () => sdk('SignatureDoesNotMatch', 403), 'denied'],
    ['a missing bucket', () => sdk('NoSuchBucket', 404), 'no-bucket'],
    ['a 400', () => sdk('EntityTooLarge', 400), 'failed'],
  ] as const)
    it(`${how}: one call, no wait`, async () => {
      const bucket = new FakeBucket();
      let calls = 0;
      bucket.fault = () => (++calls > 0 ? fault() : undefined);
      const error = await new PatientBucket(bucket, FAST).putNew('k', source()).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(BucketError);
      expect((error as BucketError).fault).toBe(kind);
      expect(calls).toBe(1);
    });

  it('a local file that is gone is no fault of the bucket', async () => {
    const error = asStoreError(Object.assign(new Error('no such file'), { code: 'ENOENT' }), 'PUT');
    expect(error.fault).toBe('failed');
  });
});

describe('a bucket that answers nothing but faults', () => {
  it('is given up once the trouble has lasted --unreachable-minutes, for every call that shares it', async () => {
    const bucket = new FakeBucket();
    bucket.fault = () => ({ fault: 'unreachable', code: 'ECONNREFUSED' });
    // A clock that moves between any two readings, as a loaded machine's may: the call that met the first fault
    // began the bucket's trouble, and no call is said to have met faults longer than the bucket has.
    let readings = 0;
    const now = () => Date.now() + ++readings;
    const store = new PatientBucket(bucket, { idleTimeoutMs: 100, unreachableMs: 600, now });
    const started = now();
    const [a, b] = await Promise.all([
      store.head('a').catch((e: unknown) => e as BucketError),
      store.putNew('b', source()).catch((e: unknown) => e as BucketError),
    ]);
    const waited = now() - started;
    expect(waited).toBeGreaterThanOrEqual(600);
    for (const e of [a, b]) {
      expect(e).toBeInstanceOf(BucketError);
      expect((e as BucketError).fault).toBe('unreachable');
      expect((e as BucketError).message).toMatch(/answered nothing but faults since .*--unreachable-minutes/);
    }
    expect(store.trouble?.code).toBe('ECONNREFUSED');
  });

  it('a write that meets nothing but faults gives up after --unreachable-minutes, though looks are answered meanwhile', async () => {
    const bucket = new FakeBucket();
    // A bucket (or a proxy before it) that answers a HEAD but resets every upload.
    bucket.fault = (op) => (op === 'putReplace' ? { fault: 'unreachable', code: 'ECONNRESET' } : undefined);
    const store = new PatientBucket(bucket, { idleTimeoutMs: 1_000, unreachableMs: 1_500 });
    const started = Date.now();
    const error = (await store.putReplace('spring/results.jsonl', source()).catch((e: unknown) => e)) as BucketError;
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_500);
    expect(error.code).toBe('ECONNRESET');
    expect(error.message).toMatch(/answered this request nothing but faults since .*--unreachable-minutes/);
  });

  it('an interrupt ends a call waiting out the bucket at once', async () => {
    const bucket = new FakeBucket();
    bucket.fault = () => 'silent';
    const store = new PatientBucket(bucket, { idleTimeoutMs: 60_000, unreachableMs: 60_000 });
    const abort = new AbortController();
    const call = store.head('a', { signal: abort.signal }).catch((e: unknown) => e);
    setTimeout(() => abort.abort(new Error('interrupted')), 50);
    expect(((await call) as Error).message).toBe('interrupted');
  });
});
