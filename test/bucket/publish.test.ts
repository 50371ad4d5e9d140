import { createHash } from 'node:crypto';
import { existsSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { exitCodeOf } from '../../src/library/outcome.js';
import { DEFAULT_KEY_LIMITS } from '../../src/scheduler/limits.js';
import { BucketSink, FolderSink, BucketError, stagingDirFor } from '../../src/sink/index.js';
import { FakeBucket, fakeBucketSink, TEST_PATIENCE } from '../helpers/fake-bucket.js';
import { runInProcess } from '../helpers/in-process.js';
import { imageManifest, readState, workspace } from '../helpers/run.js';
import { startTestSim } from '../helpers/sim.js';

/** The outputs' files left in a staging folder (not its reports' temporaries). */
function staged(statePath: string): string[] {
  const dir = stagingDirFor(statePath);
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.png'));
}

/** Every output of the state is in the bucket, with the bytes and sha256 it was verified as, and recorded. */
function expectAllPublished(bucket: FakeBucket, statePath: string, count: number): void {
  const outputs = readState(statePath).outputs as unknown as {
    path: string;
    sha256: string;
    published_to: string | null;
  }[];
  expect(outputs).toHaveLength(count);
  for (const o of outputs) {
    const object = bucket.objects.get(`spring/${o.path}`)!;
    expect(object, o.path).toBeDefined();
    expect(createHash('sha256').update(object.bytes).digest('hex')).toBe(o.sha256);
    expect(object.sha256).toBe(o.sha256);
    expect(object.contentType).toBe('image/png');
    expect(o.published_to).toBe(`s3://catalog/spring/${o.path}`);
  }
}

describe('outputs published to a bucket', () => {
  it('are each put once, create-only, verified, recorded, then removed locally; slow-downs and a silent spell are waited out', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(t.sim, imageManifest(8));
    const bucket = new FakeBucket();
    // The first three uploads meet 503 SlowDown, the next two a timeout, the next one silence: then the bucket answers.
    let putTries = 0;
    bucket.fault = (op) => {
      if (op !== 'putNew') return undefined;
      putTries++;
      if (putTries <= 3) return { fault: 'slow-down', code: 'SlowDown' };
      if (putTries <= 5) return { fault: 'unreachable', code: 'TimeoutError' };
      if (putTries === 6) return 'silent';
      return undefined;
    };
    const events: string[] = [];
    const summary = await runInProcess(t, ws, {
      outputs: fakeBucketSink(bucket, ws.statePath),
      listen: (r) =>
        r.events.on((e) => {
          if (e.kind.startsWith('publish')) events.push(e.kind);
          if (e.kind === 'bucket-outage') events.push(`bucket ${e.phase}`);
        }),
    });
    expect(exitCodeOf(summary)).toBe(0);
    expect(summary.publication).toMatchObject({ published: 8, waiting: 0, location: 's3://catalog/spring' });
    expectAllPublished(bucket, ws.statePath, 8);
    // Each output put once: no retry put one twice.
    expect(bucket.puts).toHaveLength(8);
    expect(new Set(bucket.puts).size).toBe(8);
    // The faults were ridden out by the bucket's policy, not failed publications: said as the bucket's outage.
    expect(events.filter((e) => e === 'publish-failed')).toHaveLength(0);
    expect(events.filter((e) => e.startsWith('bucket'))[0]).toBe('bucket down');
    expect(events.filter((e) => e.startsWith('bucket')).at(-1)).toBe('bucket up');
    expect(bucket.abandoned).toBe(1);
    expect(staged(ws.statePath)).toEqual([]);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(8);
    expect(bucket.objects.has('spring/.genbatch-outputs.json')).toBe(true);
  });

  it('a bucket silent past --unreachable-minutes stops submissions (exit 4) and keeps every saved output; the same command publishes them, unpaid', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(t.sim, imageManifest(6));
    const bucket = new FakeBucket();
    let down = true;
    // Every request about an output refused (its upload, and a look at it).
    bucket.fault = (_op, key) =>
      down && key.endsWith('.png') ? { fault: 'unreachable', code: 'ECONNREFUSED' } : undefined;
    const first = await runInProcess(t, ws, {
      outputs: fakeBucketSink(bucket, ws.statePath, 'spring', { idleTimeoutMs: 300, unreachableMs: 1_500 }),
    });
    expect(exitCodeOf(first)).toBe(4);
    expect(first.stop?.kind).toBe('publishing');
    // Calls about other keys are answered meanwhile, so whether the bucket's trouble began before this request's own
    // faults depends on the order of calls: both wordings name the bucket, the fault and since when.
    expect(first.stop?.message).toMatch(
      /cannot be published to s3:\/\/catalog\/spring: .*ECONNREFUSED.*the bucket has answered (this request )?nothing but faults since/,
    );
    expect(first.publication?.published).toBe(0);
    expect(first.publication?.waiting).toBeGreaterThan(0);
    expect(staged(ws.statePath)).toHaveLength(first.publication!.waiting);
    const savedByFirst = readState(ws.statePath).outputs.filter((o) => o.sha256).length;
    const downloads = t.sim.service.ledger.of('download').length;
    // One local copy is lost meanwhile: the resume downloads it again (unpaid) and publishes it.
    const lost = staged(ws.statePath)[0]!;
    rmSync(join(stagingDirFor(ws.statePath), lost));

    down = false;
    const second = await runInProcess(t, ws, { outputs: fakeBucketSink(bucket, ws.statePath) });
    expect(exitCodeOf(second)).toBe(0);
    expectAllPublished(bucket, ws.statePath, 6);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(6);
    // The outputs saved by the first run were published from their local copies, not downloaded again.
    expect(t.sim.service.ledger.of('download').length - downloads).toBe(6 - savedByFirst + 1);
    expect(staged(ws.statePath)).toEqual([]);
  });

  it('credentials refused in mid-run stop new submissions (exit 4); jobs in flight are still saved; nothing paid is lost', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(t.sim, imageManifest(30));
    const bucket = new FakeBucket();
    let refused = true;
    bucket.fault = (op) =>
      refused && op === 'putNew' && bucket.puts.length >= 2 ? { fault: 'denied', code: 'AccessDenied' } : undefined;
    // Once the run says it stops, no new submission leaves but those already let through by the submit window (at
    // most its count). Paced at 5 per 200 ms, the 30 would take 1.2 s to send: the stop comes at the third upload.
    let stopped = false;
    let submittedAfterStop = 0;
    const limits = {
      ...DEFAULT_KEY_LIMITS,
      submit: { count: 5, windowMs: 200 },
      read: { count: 120, windowMs: 100 },
      upload: { count: 30, windowMs: 100 },
    };
    const first = await runInProcess(t, ws, {
      outputs: fakeBucketSink(bucket, ws.statePath),
      limits,
      listen: (r) =>
        r.events.on((e) => {
          if (e.kind === 'stopping') stopped = true;
          if (e.kind === 'submitted' && !e.resend && stopped) submittedAfterStop++;
        }),
    });
    expect(exitCodeOf(first)).toBe(4);
    expect(first.stop?.message).toMatch(
      /cannot be published to s3:\/\/catalog\/spring: .*AccessDenied.*run the same command/,
    );
    expect(stopped).toBe(true);
    expect(submittedAfterStop).toBeLessThanOrEqual(5);
    const charged = t.sim.service.ledger.of('charge').length;
    expect(charged).toBeLessThan(30);
    // Every job that was paid for is saved locally or published: none is left behind.
    const state = readState(ws.statePath);
    expect(state.outputs.filter((o) => o.sha256)).toHaveLength(charged);

    refused = false;
    const second = await runInProcess(t, ws, { outputs: fakeBucketSink(bucket, ws.statePath) });
    expect(exitCodeOf(second)).toBe(0);
    expectAllPublished(bucket, ws.statePath, 30);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(30);
    expect(new Set(bucket.puts).size).toBe(bucket.puts.length);
  });

  it('never puts an output over an object of other bytes, even where the store ignores If-None-Match; a later run publishes it once moved away', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(t.sim, imageManifest(3));
    const bucket = new FakeBucket();
    bucket.honoursIfNoneMatch = false;
    const theirs = { bytes: Buffer.from('somebody else'), sha256: undefined, contentType: 'image/png' };
    bucket.objects.set('spring/item-1-1.png', theirs);
    const first = await runInProcess(t, ws, { outputs: fakeBucketSink(bucket, ws.statePath) });
    expect(exitCodeOf(first)).toBe(4);
    expect(first.publication).toMatchObject({ published: 2, waiting: 1, failed: 1 });
    expect(bucket.objects.get('spring/item-1-1.png')).toBe(theirs);
    expect(staged(ws.statePath)).toEqual(['item-1-1.png']);
    const publishError = (readState(ws.statePath).outputs as unknown as { path: string; publish_error: string }[]).find(
      (o) => o.path === 'item-1-1.png',
    )!.publish_error;
    expect(publishError).toMatch(/s3:\/\/catalog\/spring\/item-1-1.png holds another object .* it is not overwritten/);

    bucket.objects.delete('spring/item-1-1.png');
    const second = await runInProcess(t, ws, { outputs: fakeBucketSink(bucket, ws.statePath) });
    expect(exitCodeOf(second)).toBe(0);
    expectAllPublished(bucket, ws.statePath, 3);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(3);
  });

  it('an object a killed run put but did not record is taken as published (same size and sha256), not put again', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(t.sim, imageManifest(3));
    const bucket = new FakeBucket();
    // The bucket takes every put, then the record of it never happens: the run is gone before (as after a SIGKILL).
    let dead = true;
    bucket.fault = (op) =>
      dead && op === 'head' && bucket.puts.length > 0 ? { fault: 'denied', code: 'Killed' } : undefined;
    await runInProcess(t, ws, { outputs: fakeBucketSink(bucket, ws.statePath) });
    const putBefore = bucket.puts.length;
    expect(putBefore).toBeGreaterThan(0);
    dead = false;
    const second = await runInProcess(t, ws, { outputs: fakeBucketSink(bucket, ws.statePath) });
    expect(exitCodeOf(second)).toBe(0);
    expectAllPublished(bucket, ws.statePath, 3);
    expect(bucket.puts).toHaveLength(3);
    expect(new Set(bucket.puts).size).toBe(3);
  });

  it('a run killed as an output is verified in the bucket leaves no local copy behind once the same command runs again', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(t.sim, imageManifest(3));
    const bucket = new FakeBucket();
    // Every output is put and verified, then the run is gone before its local copy is removed (as after a SIGKILL).
    const dying = fakeBucketSink(bucket, ws.statePath);
    dying.publishing.dropLocal = async () => {
      throw new BucketError('the run was killed', 'denied', 'Killed');
    };
    await runInProcess(t, ws, { outputs: dying });
    expect(bucket.puts.length).toBeGreaterThan(0);
    expect(staged(ws.statePath).length).toBeGreaterThan(0);
    const second = await runInProcess(t, ws, { outputs: fakeBucketSink(bucket, ws.statePath) });
    expect(exitCodeOf(second)).toBe(0);
    expectAllPublished(bucket, ws.statePath, 3);
    expect(staged(ws.statePath)).toEqual([]);
    expect(bucket.puts).toHaveLength(3);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(3);
  });

  it('while the saved outputs waiting to be published pass the bound, no new submission leaves; they go on once the bucket takes them', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(t.sim, imageManifest(40));
    const bucket = new FakeBucket();
    let down = true;
    bucket.fault = (op) => (down && op === 'putNew' ? { fault: 'unreachable', code: 'ECONNRESET' } : undefined);
    let chargedWhileDown = 0;
    const run = runInProcess(t, ws, {
      outputs: fakeBucketSink(bucket, ws.statePath),
      // One output's bytes: the first saved output fills the backlog.
      options: { maxUnpublishedBytes: 1 },
    });
    // Down until the run has sat with a full backlog: every job in flight saved, nothing new sent.
    await new Promise<void>((resolve) => {
      const look = setInterval(() => {
        // The run makes its state after it has read the manifest: on a busy machine, after the first look.
        if (!existsSync(ws.statePath)) return;
        const state = readState(ws.statePath);
        const saved = state.outputs.filter((o) => o.sha256).length;
        const charged = t.sim.service.ledger.of('charge').length;
        if (saved > 0 && saved === charged) {
          chargedWhileDown = charged;
          clearInterval(look);
          resolve();
        }
      }, 50);
    });
    // Given the time to send more, it sends none while the backlog is full.
    await new Promise((r) => setTimeout(r, 500));
    expect(t.sim.service.ledger.of('charge')).toHaveLength(chargedWhileDown);
    expect(chargedWhileDown).toBeLessThan(40);
    down = false;
    const summary = await run;
    expect(exitCodeOf(summary)).toBe(0);
    expectAllPublished(bucket, ws.statePath, 40);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(40);
  });

  it('a redone item publishes v2 beside v1, an input from a published output is fetched back from the bucket; --keep-local keeps the copies', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const manifest = (take: string) =>
      `version: 1\nitems:\n  - { id: a, model: studio-lite, prompt: "${take}" }\n  - { id: b, model: studio-edit, prompt: "edit of a", inputs: [{ from: a }] }\n`;
    const ws = workspace(t.sim, manifest('first take'));
    const bucket = new FakeBucket();
    const sink = () => fakeBucketSink(bucket, ws.statePath);
    expect(exitCodeOf(await runInProcess(t, ws, { outputs: sink(), options: { only: ['a'] } }))).toBe(0);
    expect(staged(ws.statePath)).toEqual([]);
    const firstTake = bucket.objects.get('spring/a-1.png')!;
    // b's input is a's output, now only in the bucket: fetched back, then uploaded to the service.
    expect(exitCodeOf(await runInProcess(t, ws, { outputs: sink() }))).toBe(0);
    const uploaded = t.sim.service.ledger.of('upload-put').filter((p) => p.status === 200);
    expect(uploaded).toHaveLength(1);
    expect(bucket.objects.has('spring/b-1.png')).toBe(true);

    writeFileSync(join(ws.dir, 'm.yaml'), manifest('second take, much longer than the first'));
    const kept = new FakeBucket();
    for (const [k, v] of bucket.objects) kept.objects.set(k, v);
    const keepLocal = new BucketSink(
      { bucket: 'catalog', prefix: 'spring' },
      kept,
      new FolderSink(stagingDirFor(ws.statePath)),
      { keepLocal: true, patience: TEST_PATIENCE },
    );
    expect(exitCodeOf(await runInProcess(t, ws, { outputs: keepLocal, options: { redoChanged: true } }))).toBe(0);
    expect(kept.objects.get('spring/a-1.png')).toBe(firstTake);
    expect(kept.puts).toContain('spring/a-1.v2.png');
    expect(staged(ws.statePath)).toContain('a-1.v2.png');
    expect(t.sim.service.ledger.of('charge')).toHaveLength(3);
  });

  it("a web copy is made from its original even when the original's publication races it: no copy owed, exit 0", async () => {
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(t.sim, imageManifest(2, undefined, 'derivatives: [{ format: webp, width: 96 }]\n'));
    const bucket = new FakeBucket();
    const sink = fakeBucketSink(bucket, ws.statePath);
    // The copier opens the staged original, then (as a busy machine may) reads it only after the publisher has
    // put it in the bucket and removed it locally; or after a second, when nothing publishes it before its copies.
    const open = sink.open.bind(sink);
    sink.open = async (relPath) => {
      const file = await open(relPath);
      if (relPath.endsWith('-1.png'))
        for (let waited = 0; waited < 1_000 && existsSync(join(stagingDirFor(ws.statePath), relPath)); waited += 20)
          await new Promise((r) => setTimeout(r, 20));
      return file;
    };
    const summary = await runInProcess(t, ws, { outputs: sink });
    expect(summary.copies?.missing ?? 0).toBe(0);
    expect(exitCodeOf(summary)).toBe(0);
    expectAllPublished(bucket, ws.statePath, 2);
    for (const i of [0, 1]) expect(bucket.objects.has(`spring/item-${i}-1.96w.webp`)).toBe(true);
    expect(staged(ws.statePath)).toEqual([]);
  });

  it('web copies go to the bucket beside their outputs', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(t.sim, imageManifest(2, undefined, 'derivatives: [{ format: webp, width: 96 }]\n'));
    const bucket = new FakeBucket();
    expect(exitCodeOf(await runInProcess(t, ws, { outputs: fakeBucketSink(bucket, ws.statePath) }))).toBe(0);
    expectAllPublished(bucket, ws.statePath, 2);
    for (const i of [0, 1]) expect(bucket.objects.get(`spring/item-${i}-1.96w.webp`)?.contentType).toBe('image/webp');
    expect(staged(ws.statePath)).toEqual([]);
  });
});
