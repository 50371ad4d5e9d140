// Outputs published to a local S3-compatible server (s3rver, from npm) by `genbatch run --out s3://...`.
// Goals: publication ends under 2 s after the last download at 60x (2,000 images); under 5 s when the bucket
// answers 15% of writes with 503 SlowDown and goes silent once for 5 s (500 images, --idle-timeout 1); peak RSS
// under 250 MB while 150 MB videos are published (multipart, parts of 8 MiB, 4 at once).
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSqlite } from '../dist/store/driver.js';
import S3rver from 's3rver';
import { startSimulator } from '../dist/simulator/index.js';
import { startFaultProxy } from './bucket.mjs';
import { fmt, measureCli, root } from './measure.mjs';

const IMAGES = 2_000;
const FAULTY_IMAGES = 500;
const TIME_SCALE = 60;
const GOAL = { trailMs: 2_000, faultyTrailMs: 5_000, rssMb: 250 };

export async function publishBench() {
  const server = new S3rver({
    port: 0,
    address: '127.0.0.1',
    silent: true,
    directory: mkdtempSync(join(tmpdir(), 'genbatch-bench-s3-')),
    configureBuckets: [{ name: 'catalog' }],
  });
  const { port } = await server.run();
  const env = {
    AWS_ENDPOINT_URL: `http://127.0.0.1:${port}`,
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: 'S3RVER',
    AWS_SECRET_ACCESS_KEY: 'S3RVER',
  };
  try {
    const faulty = await faultyCase(env);
    const images = await imagesCase(env);
    const backlog = await childCase(env, ['images', String(IMAGES)]);
    console.log(
      `publish a backlog of ${backlog.objects} staged 48 KB images, four at once, to s3rver: ${fmt(backlog.seconds, 1)} s, ` +
        `${fmt(backlog.objects / backlog.seconds, 1)} objects/s, ${fmt(backlog.bytes / 1024 / 1024 / backlog.seconds, 1)} MB/s; ` +
        `CPU ${fmt(backlog.cpuSeconds)} s (${fmt((backlog.cpuSeconds * 1000) / backlog.objects, 1)} ms per object); peak RSS ${fmt(backlog.rssMb, 0)} MB`,
    );
    const videos = await childCase(env, ['videos']);
    const pass = videos.rssMb < GOAL.rssMb;
    console.log(
      `publish ${videos.objects} videos of 150 MB at once to s3rver (multipart): ${fmt(videos.seconds, 1)} s, ` +
        `${fmt(videos.bytes / 1024 / 1024 / videos.seconds, 1)} MB/s; peak RSS ${fmt(videos.rssMb, 0)} MB (goal < ${GOAL.rssMb}): ${pass ? 'met' : 'MISSED'}`,
    );
    return images && faulty && pass;
  } finally {
    await server.close();
  }
}

/** The images run again with a bucket that slows down 15% of writes and goes silent once for 5 s. */
async function faultyCase(awsEnv) {
  const proxy = await startFaultProxy(awsEnv);
  let writes = 0;
  let silentUntil = 0;
  let state = 7;
  // A small seeded draw: the same writes slow down on every run of the bench.
  const random = () => (state = (state * 48271) % 2147483647) / 2147483647;
  proxy.decide = (method) => {
    const write = method === 'PUT' || method === 'POST';
    if (write && ++writes === Math.round(FAULTY_IMAGES * 0.4)) silentUntil = Date.now() + 5_000;
    if (Date.now() < silentUntil) return 'silent';
    return write && random() < 0.15 ? 'slow-down' : 'pass';
  };
  try {
    const { r, o } = await publishRun(proxy.env, FAULTY_IMAGES, ['--idle-timeout', '1'], 'faulty');
    const trailMs = o.lastPublished - o.lastDownloaded;
    const pass = o.published === FAULTY_IMAGES && trailMs < GOAL.faultyTrailMs;
    console.log(
      `publish ${FAULTY_IMAGES} images at ${TIME_SCALE}x to s3rver answering ${proxy.seen['slow-down']} of ${writes} writes with 503 SlowDown ` +
        `and silent for 5 s (${proxy.seen.silent} requests swallowed): wall ${fmt(r.wallSeconds, 1)} s; ${o.published} published; ` +
        `the last ${fmt(trailMs, 0)} ms after the last download (goal < ${GOAL.faultyTrailMs}); CPU ${fmt(r.cpuSeconds)} s; ` +
        `peak RSS ${fmt(r.peakRssMb, 0)} MB: ${pass ? 'met' : 'MISSED'}`,
    );
    return pass;
  } finally {
    await proxy.close();
  }
}

/** `genbatch run` of `count` images to `s3://catalog/<prefix>`: its measure, and the state's publication figures. */
async function publishRun(awsEnv, count, extra, prefix) {
  const sim = await startSimulator({ announce: false, timeScale: TIME_SCALE, seed: 11 });
  try {
    const dir = mkdtempSync(join(tmpdir(), 'genbatch-bench-publish-'));
    const items = Array.from({ length: count }, (_, i) => `  - { id: p${i}, prompt: "product ${i}" }`).join('\n');
    writeFileSync(join(dir, 'm.yaml'), `version: 1\ndefaults: { model: studio-lite }\nitems:\n${items}\n`);
    const env = { ...awsEnv, GENBATCH_BASE_URL: sim.baseUrl, GENBATCH_API_KEY: sim.apiKey };
    const args = ['run', 'm.yaml', '--time-scale', String(TIME_SCALE), '--out', `s3://catalog/${prefix}`, ...extra];
    const r = await measureCli(args, { cwd: dir, env });
    if (r.code !== 0) throw new Error(`run exited ${r.code}: ${r.stdout}${r.stderr}`);
    const db = openSqlite(join(dir, '.genbatch', 'm.sqlite'), { readonly: true });
    const o = db
      .prepare(
        `SELECT count(published_at) AS published, sum(bytes) AS bytes, min(published_at) AS firstPublished,
                max(published_at) AS lastPublished, max(downloaded_at) AS lastDownloaded FROM outputs`,
      )
      .get();
    db.close();
    return { r, o };
  } finally {
    await sim.close();
  }
}

async function imagesCase(awsEnv) {
  const { r, o } = await publishRun(awsEnv, IMAGES, [], 'bench');
  const spanSeconds = (o.lastPublished - o.firstPublished) / 1000;
  const trailMs = o.lastPublished - o.lastDownloaded;
  const pass = o.published === IMAGES && trailMs < GOAL.trailMs;
  console.log(
    `publish ${IMAGES} images at ${TIME_SCALE}x to s3rver: wall ${fmt(r.wallSeconds, 1)} s; ${o.published} published, ` +
      `${fmt(o.published / spanSeconds, 1)} objects/s and ${fmt(o.bytes / 1024 / 1024 / spanSeconds)} MB/s over the run ` +
      `(${fmt(o.bytes / 1024 / 1024, 1)} MB); the last published ${fmt(trailMs, 0)} ms after the last download (goal < ${GOAL.trailMs}); ` +
      `CPU ${fmt(r.cpuSeconds)} s; peak RSS ${fmt(r.peakRssMb, 0)} MB: ${pass ? 'met' : 'MISSED'}`,
  );
  return pass;
}

/** bench/publish-big.mjs in a child of its own (its RSS apart from s3rver's): its figures, CPU and peak RSS. */
async function childCase(awsEnv, args) {
  const rssFile = join(mkdtempSync(join(tmpdir(), 'genbatch-bench-')), 'rss');
  const script = join(root, 'bench', 'publish-big.mjs');
  const child = spawn(process.execPath, ['--import', join(root, 'bench', 'rss-probe.mjs'), script, ...args], {
    env: { ...process.env, ...awsEnv, BENCH_RSS_FILE: rssFile },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  const code = await new Promise((resolve) => child.on('close', resolve));
  if (code !== 0 || !existsSync(rssFile))
    throw new Error(`bench/publish-big.mjs ${args.join(' ')} exited ${code}: ${out}`);
  const usage = JSON.parse(readFileSync(rssFile, 'utf8'));
  return { ...JSON.parse(out), rssMb: usage.maxRss / 1024 / 1024, cpuSeconds: usage.cpuSeconds };
}
