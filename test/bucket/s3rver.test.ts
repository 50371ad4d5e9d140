import { DEFAULT_PATIENCE } from '../../src/options/flags.js';
import { createHash } from 'node:crypto';
import { appendFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { S3BucketClient } from '../../src/sink/bucket/s3-bucket-client.js';
import { openOutputSink, stagingDirFor } from '../../src/sink/index.js';
import { exitCodeWithin, runCliInProcess, startCli } from '../helpers/cli.js';
import { startTestReview } from '../helpers/review.js';
import { imageManifest, killLoop, readState, workspace } from '../helpers/run.js';
import { startTestBucket } from '../helpers/s3.js';
import { startTestSim } from '../helpers/sim.js';

async function textOf(body: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of body) chunks.push(Buffer.from(c as Buffer));
  return Buffer.concat(chunks);
}

function stagedPngs(statePath: string): string[] {
  const dir = stagingDirFor(statePath);
  return existsSync(dir)
    ? readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.png'))
    : [];
}

/** The live line said as the run ended (stderr is no terminal here: a line when it starts, one when it ends). */
function endedLine(stderr: string): string {
  const line = stderr.split('\n').find((l) => l.includes(' UTC ended: '));
  expect(line, stderr).toBeDefined();
  return line!;
}

describe('outputs published to an S3-compatible server (s3rver, through the AWS SDK)', () => {
  it("a run that ends lets go of the bucket: none of its connections stays open (the server's keep-alive is 5 s)", {
    timeout: 60_000,
  }, async () => {
    const t = await startTestSim({ timeScale: 600 });
    const s3 = await startTestBucket();
    const ws = workspace(t.sim, imageManifest(3));
    const result = await runCliInProcess(
      [...ws.args(['--out', 's3://catalog/closed'])],
      { ...ws.env, ...s3.env },
      ws.dir,
    );
    expect(result.code, result.stdout + result.stderr).toBe(0);
    // The sockets are destroyed when the run closes its output place: the server hears it within milliseconds, long
    // before it would drop an idle keep-alive connection itself.
    await vi.waitFor(async () => expect(await s3.connections()).toBe(0), { timeout: 2_000, interval: 20 });
  });

  it('lands every output, the results and the gallery under the prefix; status, report and review work from the bucket alone', {
    timeout: 60_000,
  }, async () => {
    const t = await startTestSim({ timeScale: 600 });
    const s3 = await startTestBucket();
    const ws = workspace(t.sim, imageManifest(5));
    const env = { ...ws.env, ...s3.env };
    const result = await runCliInProcess([...ws.args(['--out', 's3://catalog/spring'])], env, ws.dir);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain('5 outputs published to s3://catalog/spring');
    expect(result.stdout).toContain('results: s3://catalog/spring/results.jsonl');
    expect(existsSync(ws.outDir)).toBe(false);
    expect(stagedPngs(ws.statePath)).toEqual([]);
    // The live line counts the outputs saved and not yet published: none once the run ends.
    expect(endedLine(result.stderr)).not.toContain('to publish');

    const bucket = new S3BucketClient({ bucket: 'catalog', idleTimeoutMs: 5_000, env: s3.env });
    const outputs = readState(ws.statePath).outputs;
    for (const o of outputs) {
      const got = (await bucket.get(`spring/${o.path}`))!;
      expect(
        createHash('sha256')
          .update(await textOf(got.body))
          .digest('hex'),
      ).toBe(o.sha256);
      expect((await bucket.head(`spring/${o.path}`))?.sha256).toBe(o.sha256);
    }
    expect(s3.created.filter((k) => k.endsWith('.png')).sort()).toEqual(outputs.map((o) => `spring/${o.path}`).sort());
    const results = (await textOf((await bucket.get('spring/results.jsonl'))!.body)).toString('utf8');
    expect(results.trim().split('\n')[0]).toContain('"url":"s3://catalog/spring/item-0-1.png"');
    const csv = (await textOf((await bucket.get('spring/results.csv'))!.body)).toString('utf8');
    expect(csv).toContain('s3://catalog/spring/item-0-1.png');
    // The gallery links its outputs relative to itself: it opens from the bucket's website or a CDN.
    const gallery = (await textOf((await bucket.get('spring/index.html'))!.body)).toString('utf8');
    expect(gallery).toContain('item-0-1.png');
    expect(gallery).not.toContain(stagingDirFor(ws.statePath));

    const status = JSON.parse((await runCliInProcess(['status', 'm.yaml', '--json'], env, ws.dir)).stdout);
    expect(status.publication).toMatchObject({ to: 's3://catalog/spring', published: 5, waiting: 0 });
    const report = await runCliInProcess(['report', 'm.yaml', '--json'], env, ws.dir);
    expect(report.code, report.stderr).toBe(0);
    expect(s3.created.filter((k) => k === 'spring/results.jsonl')).toHaveLength(2);

    // No local copy is left: the review server reads the output from the bucket, the page never sees a credential.
    const review = await startTestReview({
      statePath: ws.statePath,
      outputs: await openOutputSink('s3://catalog/spring', {
        statePath: ws.statePath,
        env: s3.env,
        patience: DEFAULT_PATIENCE,
      }),
      title: 'm',
      budget: null,
    });
    const served = await fetch(`${review.base}/files/${outputs[0]!.path}?token=${review.token}`);
    expect(served.status).toBe(200);
    expect(
      createHash('sha256')
        .update(Buffer.from(await served.arrayBuffer()))
        .digest('hex'),
    ).toBe(outputs[0]!.sha256);
    const page = await (await fetch(`${review.base}/?token=${review.token}`)).text();
    expect(page).not.toContain('S3RVER');
    // The bucket's secret reaches neither the output nor the log.
    expect(result.stdout + result.stderr).not.toContain('S3RVER');
    expect(readFileSync(join(ws.dir, '.genbatch', 'm.log'), 'utf8')).not.toContain('S3RVER');
  });

  it('refuses to start, exit 4 naming the bucket, with credentials it refuses or a bucket that does not exist: nothing submitted', {
    timeout: 30_000,
  }, async () => {
    const t = await startTestSim({ timeScale: 600 });
    const s3 = await startTestBucket();
    const ws = workspace(t.sim, imageManifest(3));
    const wrongKey = await runCliInProcess(
      ws.args(['--out', 's3://catalog/spring']),
      { ...ws.env, ...s3.env, AWS_ACCESS_KEY_ID: 'NOT-A-KEY' },
      ws.dir,
    );
    expect(wrongKey.code).toBe(4);
    expect(wrongKey.stderr + wrongKey.stdout).toMatch(
      /cannot write to s3:\/\/catalog\/spring \(InvalidAccessKeyId\): the credentials may not write there, or none were found: check AWS_ACCESS_KEY_ID/,
    );
    const noBucket = await runCliInProcess(
      ws.args(['--out', 's3://no-such-bucket/spring']),
      { ...ws.env, ...s3.env },
      ws.dir,
    );
    expect(noBucket.code).toBe(4);
    expect(noBucket.stderr + noBucket.stdout).toMatch(
      /cannot write to s3:\/\/no-such-bucket\/spring \(NoSuchBucket\): the bucket does not exist/,
    );
    expect(t.sim.service.ledger.of('request').filter((r) => r.method === 'POST')).toHaveLength(0);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(0);
  });

  it('a run killed during publication is resumed by the same command: nothing paid twice, nothing put twice, nothing lost', {
    timeout: 60_000,
  }, async () => {
    const t = await startTestSim({ timeScale: 600 });
    const s3 = await startTestBucket();
    const ws = workspace(t.sim, imageManifest(12));
    const env = { ...ws.env, ...s3.env };
    const cli = startCli(ws.args(['--out', 's3://catalog/spring']), env, ws.dir);
    s3.onCreated((key) => {
      if (key.endsWith('.png')) cli.child.kill('SIGKILL');
    });
    await exitCodeWithin(cli, 30_000);
    expect(cli.child.signalCode).toBe('SIGKILL');
    const result = await runCliInProcess(ws.args(['--out', 's3://catalog/spring']), env, ws.dir);
    expect(result.code, result.stdout + result.stderr).toBe(0);
    expect(endedLine(result.stderr)).not.toContain('to publish');
    const pngs = s3.created.filter((k) => k.endsWith('.png'));
    expect(pngs).toHaveLength(12);
    expect(new Set(pngs).size).toBe(12);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(12);
    expect(readState(ws.statePath).outputs.filter((o) => o.published_to)).toHaveLength(12);
  });

  it('killed 6 times at any instant, then finished by the same command: every object put once, each item paid once', {
    timeout: 120_000,
  }, async () => {
    const t = await startTestSim({ timeScale: 60 });
    const s3 = await startTestBucket();
    const plain = workspace(t.sim, imageManifest(24), {}, 60);
    const env = { ...plain.env, ...s3.env };
    const args = (extra: string[] = []) => plain.args(['--out', 's3://catalog/spring', ...extra]);
    const ws = { ...plain, env, args, run: (extra: string[] = []) => runCliInProcess(args(extra), env, plain.dir) };
    const { final } = await killLoop(t.sim, ws, 6);
    expect(final.code, final.stdout + final.stderr).toBe(0);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(24);
    // A put cut off by a kill stored nothing; a put the kill let finish is recognised by the next run, not repeated.
    const pngs = s3.created.filter((k) => k.endsWith('.png'));
    expect(pngs).toHaveLength(24);
    expect(new Set(pngs).size).toBe(24);
    const outputs = readState(ws.statePath).outputs;
    expect(outputs.map((o) => o.published_to).sort()).toEqual(pngs.map((k) => `s3://catalog/${k}`).sort());
    expect(stagedPngs(ws.statePath)).toEqual([]);
  });

  it("the test bucket keeps S3's all-or-nothing PUT: a body cut off (a run killed mid-upload) stores nothing", {
    timeout: 10_000,
  }, async () => {
    const s3 = await startTestBucket();
    const begun = new Promise<string>((resolve) => s3.onPutBegun(resolve));
    const put = request(`${s3.env.AWS_ENDPOINT_URL}/catalog/spring/cut-1.png`, {
      method: 'PUT',
      headers: { 'content-length': 10_000, 'content-type': 'image/png' },
    });
    put.on('error', () => {});
    put.write(Buffer.alloc(4_000, 7));
    expect(await begun).toBe('spring/cut-1.png');
    put.destroy();
    await s3.putsSettled();
    const bucket = new S3BucketClient({ bucket: 'catalog', idleTimeoutMs: 30_000, env: s3.env });
    expect(await bucket.head('spring/cut-1.png')).toBeUndefined();
    expect(s3.created).toEqual([]);
  });

  it('puts a 150 MB video in parts, create-only, with its sha256 kept as the object metadata', {
    timeout: 60_000,
  }, async () => {
    const s3 = await startTestBucket();
    const path = join(mkdtempSync(join(tmpdir(), 'genbatch-big-')), 'spin-1.mp4');
    const chunk = Buffer.alloc(1024 * 1024);
    for (let i = 0; i < chunk.length; i++) chunk[i] = (i * 31) & 0xff;
    const hash = createHash('sha256');
    writeFileSync(path, '');
    for (let i = 0; i < 150; i++) {
      chunk[0] = i;
      appendFileSync(path, chunk);
      hash.update(chunk);
    }
    try {
      const sha256 = hash.digest('hex');
      const bucket = new S3BucketClient({ bucket: 'catalog', idleTimeoutMs: 30_000, env: s3.env });
      const source = { path, bytes: 150 * 1024 * 1024, sha256, contentType: 'video/mp4' };
      expect(await bucket.putNew('spring/spin-1.mp4', source)).toBe('created');
      expect(await bucket.head('spring/spin-1.mp4')).toEqual({ size: 150 * 1024 * 1024, sha256 });
      expect(s3.created).toEqual(['spring/spin-1.mp4']);
    } finally {
      rmSync(path, { force: true });
    }
  });
});
