import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import { S3BucketClient } from '../../src/sink/bucket/s3-bucket-client.js';
import { Store } from '../../src/store/index.js';
import { openSqlite } from '../../src/store/driver.js';
import { exitCodeWithin, runCliInProcess, startCli } from '../helpers/cli.js';
import { startBucketProxy } from '../helpers/bucket-proxy.js';
import { imageManifest, readState, workspace } from '../helpers/run.js';
import { startTestBucket } from '../helpers/s3.js';
import { startTestSim } from '../helpers/sim.js';

async function bytesOf(body: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of body) chunks.push(Buffer.from(c as Buffer));
  return Buffer.concat(chunks);
}

/** The lease a state's last run could not give up, as its state remembers it. */
function leaseLeft(statePath: string): string | undefined {
  const db = openSqlite(statePath, { readonly: true });
  try {
    return (db.prepare("SELECT value FROM meta WHERE key = 'lease_left'").get() as { value: string } | undefined)
      ?.value;
  } finally {
    db.close();
  }
}

/** Waits for `done()` to hold, looking every 50 ms; fails with `what` after `ms`. */
async function until(done: () => boolean | Promise<boolean>, what: () => string, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`not seen within ${ms} ms: ${what()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('a real bucket through the AWS SDK, slowing down, refusing and going silent (s3rver behind a fault proxy)', () => {
  it('every output and web copy lands once, verified; status names the bucket as the wait; exit 0 and no stack trace', {
    timeout: 90_000,
  }, async () => {
    const t = await startTestSim({ timeScale: 600 });
    const s3 = await startTestBucket();
    const proxy = await startBucketProxy(s3.env);
    const extra = 'derivatives: [{ format: webp, width: 96 }]\nchecks: { blank: true }\n';
    const ws = workspace(
      t.sim,
      imageManifest(12, (i) => `product ${i}`, extra),
    );
    const env = { ...ws.env, ...proxy.env };
    // About 15% of writes answered 503 SlowDown, and one 500.
    let puts = 0;
    proxy.decide = (method) => {
      if (method !== 'PUT' && method !== 'POST') return 'pass';
      puts++;
      if (puts === 5) return 'internal-error';
      return puts % 7 === 3 ? 'slow-down' : 'pass';
    };
    const run = startCli(ws.args(['--out', 's3://catalog/shop', '--idle-timeout', '0.5']), env, ws.dir);
    await until(
      () => s3.created.filter((k) => k.endsWith('.png')).length >= 3,
      () => `three outputs in the bucket: ${run.output()}`,
    );
    // Nothing listens for a second, then every request is read and never answered for two.
    await proxy.refuseFor(1_000);
    proxy.decide = () => 'silent';
    // status, from another process, says the run waits for the bucket: since when, and until when it keeps trying.
    let said: { since: string; givesUpAt: string } | null = null;
    await until(
      async () => {
        const status = await runCliInProcess(['status', 'm.yaml', '--json'], ws.env, ws.dir);
        said = JSON.parse(status.stdout).run.bucket;
        return said !== null;
      },
      () => `status naming the bucket: ${run.output()}`,
    );
    expect(Date.parse(said!.givesUpAt) - Date.parse(said!.since)).toBe(30 * 60_000);
    await new Promise((r) => setTimeout(r, 2_000));
    proxy.decide = () => 'pass';
    const [code] = (await once(run.child, 'exit')) as [number];
    const output = run.output();
    expect(code, output).toBe(0);
    expect(output).not.toMatch(/^\s+at /m);
    // Nothing of the SDK's own reaches the user (it warns on the console of each failed streaming PUT).
    expect(output).not.toMatch(/non-retryable|encountered/);
    expect(output).toMatch(/the bucket answers nothing but faults/);
    expect(output).toMatch(/the bucket answers again/);
    expect(output).toContain('12 outputs and 12 web copies published to s3://catalog/shop');
    expect(proxy.seen['slow-down']).toBeGreaterThan(0);
    expect(proxy.seen.silent).toBeGreaterThan(0);

    // Each object once, with the sha256 the state recorded.
    const bucket = new S3BucketClient({ bucket: 'catalog', idleTimeoutMs: 5_000, env: s3.env });
    const store = Store.open(ws.statePath);
    try {
      const outputs = readState(ws.statePath).outputs as unknown as { job_id: string; idx: number; path: string }[];
      expect(outputs).toHaveLength(12);
      for (const o of outputs) {
        const files = [o.path, ...store.webCopies.ofOutput(o.job_id, o.idx).map((d) => d.path)];
        expect(files).toHaveLength(2);
        for (const path of files) {
          const got = (await bucket.get(`shop/${path}`))!;
          const sha = createHash('sha256')
            .update(await bytesOf(got.body))
            .digest('hex');
          expect((await bucket.head(`shop/${path}`))?.sha256, path).toBe(sha);
        }
      }
    } finally {
      store.close();
    }
    const objects = s3.created.filter((k) => /\.(png|webp)$/.test(k));
    expect(objects).toHaveLength(24);
    expect(new Set(objects).size).toBe(24);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(12);
  });

  it.each(['silent', 'refusing'] as const)(
    'SIGTERM while the bucket is %s: 130 within 2 s, what is left said; the next run publishes the rest',
    {
      timeout: 60_000,
    },
    async (how) => {
      const t = await startTestSim({ timeScale: 600 });
      const s3 = await startTestBucket();
      const proxy = await startBucketProxy(s3.env);
      const ws = workspace(t.sim, imageManifest(8));
      const env = { ...ws.env, ...proxy.env };
      const run = startCli(ws.args(['--out', 's3://catalog/term']), env, ws.dir);
      await until(
        () => s3.created.some((k) => k.endsWith('.png')),
        () => `an output in the bucket: ${run.output()}`,
      );
      // Every request read and never answered, or nothing listening: the end would wait for as long as that lasts.
      let back: Promise<void> = Promise.resolve();
      if (how === 'silent') {
        proxy.decide = () => 'silent';
        await until(
          () => proxy.seen.silent > 0,
          () => `a request held: ${run.output()}`,
        );
      } else back = proxy.refuseFor(4_000);
      const signalled = Date.now();
      run.child.kill('SIGTERM');
      const code = await exitCodeWithin(run, 3_000);
      const took = Date.now() - signalled;
      expect(code, run.output()).toBe(130);
      // The bucket gets a second; the process's own deadline is 1.8 s; a loaded machine gets a little slack.
      expect(took).toBeLessThan(3_000);
      // What the bucket did not take is said, and left to the next run: the clean end, not the process's deadline.
      expect(run.output()).toMatch(
        /the results, the state's last snapshot and the release of the place are written by the next run: the bucket did not answer within a second of the interrupt/,
      );
      expect(run.output()).not.toMatch(/exiting now/);
      expect(run.output()).not.toMatch(/^\s+at /m);
      // The lease it could not give up is remembered as its own: the next run of this state takes it, wherever it runs.
      expect(JSON.parse(leaseLeft(ws.statePath)!)).toMatchObject({ pid: run.child.pid });
      proxy.decide = () => 'pass';
      await back;
      const again = await runCliInProcess(ws.args(['--out', 's3://catalog/term']), env, ws.dir);
      expect(again.code, again.stderr).toBe(0);
      expect(leaseLeft(ws.statePath)).toBeUndefined();
      const objects = s3.created.filter((k) => k.endsWith('.png'));
      expect(new Set(objects).size).toBe(8);
      expect(objects).toHaveLength(8);
      expect(t.sim.service.ledger.of('charge')).toHaveLength(8);
    },
  );

  it('SIGTERM while the end writes into a bucket that answers SlowDown: 130, whatever the end still owes', {
    timeout: 60_000,
  }, async () => {
    const t = await startTestSim({ timeScale: 600 });
    const s3 = await startTestBucket();
    const proxy = await startBucketProxy(s3.env);
    const ws = workspace(t.sim, imageManifest(4));
    const run = startCli(ws.args(['--out', 's3://catalog/end']), { ...ws.env, ...proxy.env }, ws.dir);
    // Every item is done and published; the interrupt lands while the results meet SlowDowns.
    let signalled = false;
    proxy.decide = (method, path) => {
      if (method !== 'PUT' || !/results\.(jsonl|csv)$|index\.html$/.test(path)) return 'pass';
      if (!signalled) {
        signalled = true;
        run.child.kill('SIGTERM');
      }
      return 'slow-down';
    };
    const code = await exitCodeWithin(run, 20_000);
    expect(signalled, run.output()).toBe(true);
    expect(code, run.output()).toBe(130);
    expect(run.output()).not.toMatch(/^\s+at /m);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(4);
  });

  it('a SlowDown on the write check at the start is ridden out, not a refusal of the run', {
    timeout: 60_000,
  }, async () => {
    const t = await startTestSim({ timeScale: 600 });
    const s3 = await startTestBucket();
    const proxy = await startBucketProxy(s3.env);
    const ws = workspace(t.sim, imageManifest(2));
    // The first three writes (the probe's among them) are told to slow down.
    let writes = 0;
    proxy.decide = (method) => (method === 'PUT' && ++writes <= 3 ? 'slow-down' : 'pass');
    const result = await runCliInProcess(
      ws.args(['--out', 's3://catalog/spring']),
      { ...ws.env, ...proxy.env },
      ws.dir,
    );
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain('2 outputs published to s3://catalog/spring');
    expect(proxy.seen['slow-down']).toBe(3);
  });

  it('a bucket silent for good: the run gives up past --unreachable-minutes and its process exits 4, no request left open', {
    timeout: 60_000,
  }, async () => {
    const t = await startTestSim({ timeScale: 600 });
    const s3 = await startTestBucket();
    const proxy = await startBucketProxy(s3.env);
    proxy.decide = () => 'silent';
    const ws = workspace(t.sim, imageManifest(2));
    const args = ['--out', 's3://catalog/spring', '--unreachable-minutes', '0.02', '--idle-timeout', '0.5'];
    const run = startCli(ws.args(args), { ...ws.env, ...proxy.env }, ws.dir);
    // The write check gives up after 1.2 s; the results' puts too. Before every request carried its abort, a put
    // of lib-storage's stayed on the wire and held the process open after its last line (a hang).
    const code = await exitCodeWithin(run, 20_000);
    expect(code, run.output()).toBe(4);
    expect(run.output()).toMatch(/cannot write to s3:\/\/catalog\/spring \(IDLE_TIMEOUT\)/);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(0);
  });

  it('an abandoned put, single or multipart, leaves no request on the wire', { timeout: 60_000 }, async () => {
    const s3 = await startTestBucket();
    const proxy = await startBucketProxy(s3.env);
    proxy.decide = () => 'silent';
    const store = new S3BucketClient({ bucket: 'catalog', idleTimeoutMs: 60_000, env: proxy.env });
    const small = join(tmpdir(), `genbatch-small-${process.pid}.txt`);
    const large = join(tmpdir(), `genbatch-large-${process.pid}.bin`);
    writeFileSync(small, 'results');
    writeFileSync(large, Buffer.alloc(17 * 1024 * 1024, 7));
    for (const [path, bytes] of [
      [small, 7],
      [large, 17 * 1024 * 1024],
    ] as const) {
      const abort = new AbortController();
      const put = store
        .putReplace('spring/r', { path, bytes, contentType: 'text/plain' }, { signal: abort.signal })
        .catch((e: unknown) => e);
      // Once the request is on the wire (read by the bucket, never answered), it is abandoned.
      for (let i = 0; i < 100 && proxy.heldOpen() === 0; i++) await new Promise((r) => setTimeout(r, 20));
      expect(proxy.heldOpen()).toBeGreaterThan(0);
      abort.abort(new Error('abandoned'));
      expect(await put).toBeInstanceOf(Error);
      for (let i = 0; i < 50 && proxy.heldOpen() > 0; i++) await new Promise((r) => setTimeout(r, 20));
      expect(proxy.heldOpen(), `${bytes} bytes`).toBe(0);
    }
  });
});
