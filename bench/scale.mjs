// A 100,000-row catalog against the simulator: start and restart to the first submission, peak RSS
// while running, status --json and validate; then 20,000 images with the limits raised far above a
// key's: CPU per item, and the submission rate late in the run against early (no slowdown as the
// state fills). Each figure: min / median of 3 runs.
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { startSimulator } from '../dist/simulator/index.js';
import { fmt, measureCli, minMedian, writeCatalog } from './measure.mjs';

const ROWS = 100_000;
const GOAL = { firstSubmissionSeconds: 1, statusSeconds: 0.5, validateSeconds: 1.5, rssMb: 250, cpuMsPerItem: 3 };
const RUNS = 3;

/** Runs `genbatch run` until the simulator has seen `posts` more submissions, then interrupts it; returns when the first came. */
async function runUntil(sim, dir, args, posts, env, onStart) {
  const before = sim.service.ledger.of('request').filter((r) => r.method === 'POST').length;
  let firstAt;
  const r = await measureCli(['run', 'big.yaml', ...args], {
    cwd: dir,
    env,
    during: (child, startedAt) => {
      onStart?.(startedAt);
      const timer = setInterval(() => {
        const sent = sim.service.ledger.of('request').filter((q) => q.method === 'POST');
        if (firstAt === undefined && sent.length > before) firstAt = (Date.now() - startedAt) / 1000;
        if (sent.length >= before + posts) {
          clearInterval(timer);
          child.kill('SIGINT');
        }
      }, 5);
      child.on('close', () => clearInterval(timer));
    },
  });
  return { ...r, firstSubmissionSeconds: firstAt };
}

export async function scaleBench() {
  const dir = await writeCatalog(ROWS);
  let ok = true;
  const report = (label, values, goal, unit, digits = 2) => {
    const pass = [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] <= goal;
    ok &&= pass;
    console.log(
      `scale ${label}: ${minMedian(values, digits, unit)} (goal <= ${goal}${unit}): ${pass ? 'met' : 'MISSED'}`,
    );
  };

  const validate = [];
  for (let i = 0; i < RUNS; i++) validate.push((await measureCli(['validate', 'big.yaml'], { cwd: dir })).wallSeconds);
  report(`validate of ${ROWS.toLocaleString('en-US')} rows`, validate, GOAL.validateSeconds, ' s');

  const sim = await startSimulator({
    announce: false,
    timeScale: 600,
    seed: 5,
    credits: 1e9,
    keys: [{ label: 'main', dailyCap: 1e9 }],
    linkTtlSeconds: 7 * 86400,
  });
  try {
    const env = { GENBATCH_BASE_URL: sim.baseUrl, GENBATCH_API_KEY: sim.apiKey };
    const args = ['--time-scale', '600', '--daily-cap', '1000000000'];
    const firstStarts = [];
    const restarts = [];
    const rss = { first: [], restart: [] };
    // A first start has no state (it validates every row and writes every item); a restart resumes the state the last run left.
    for (let i = 0; i < RUNS * 2; i++) {
      if (i < RUNS) rmSync(join(dir, '.genbatch'), { recursive: true, force: true });
      const r = await runUntil(sim, dir, args, 100, env);
      (i < RUNS ? firstStarts : restarts).push(r.firstSubmissionSeconds ?? Infinity);
      (i < RUNS ? rss.first : rss.restart).push(r.peakRssMb);
    }
    report(
      `first start to the first submission, ${ROWS.toLocaleString('en-US')} rows`,
      firstStarts,
      GOAL.firstSubmissionSeconds,
      ' s',
    );
    report(
      `restart to the first submission, ${ROWS.toLocaleString('en-US')} rows`,
      restarts,
      GOAL.firstSubmissionSeconds,
      ' s',
    );
    // Each run ends (interrupted) by writing the report of all 100,000 items.
    report('peak RSS while running, first starts', rss.first, GOAL.rssMb, ' MB', 0);
    report('peak RSS while running, restarts', rss.restart, GOAL.rssMb, ' MB', 0);
    const status = [];
    for (let i = 0; i < RUNS; i++) {
      const r = await measureCli(['status', 'big.yaml', '--json'], { cwd: dir });
      if (r.code !== 0) throw new Error(`status exited ${r.code}: ${r.stderr}`);
      status.push(r.wallSeconds);
    }
    report('status --json', status, GOAL.statusSeconds, ' s');
  } finally {
    await sim.close();
  }
  ok = (await restartAfterKill(dir)) && ok;
  return (await manyImages()) && ok;
}

/**
 * The catalog at raised limits (200 in flight), SIGKILLed after about 10,000 submissions, then started
 * again: the restart reaches its first submission as quickly as a first start, whatever has already run.
 */
export async function restartAfterKill(dir) {
  const KILL_AFTER = 10_000;
  const limits = { submissionsPerWindow: 100_000, readsPerWindow: 1_000_000, imagesInFlight: 200 };
  const restarts = [];
  const rss = [];
  for (let i = 0; i < RUNS; i++) {
    rmSync(join(dir, '.genbatch'), { recursive: true, force: true });
    const sim = await startSimulator({
      announce: false,
      timeScale: 3600,
      seed: 11 + i,
      credits: 1e9,
      keys: [{ label: 'main', dailyCap: 1e9 }],
      imageSeconds: [1, 2],
      linkTtlSeconds: 7 * 86400,
      limits,
    });
    try {
      const env = { GENBATCH_BASE_URL: sim.baseUrl, GENBATCH_API_KEY: sim.apiKey };
      const args = [
        '--time-scale',
        '3600',
        '--daily-cap',
        '1000000000',
        '--submit-rate',
        '100000/60s',
        '--read-rate',
        '1000000/60s',
        '--max-images-in-flight',
        '200',
      ];
      const posts = () => sim.service.ledger.of('charge').length;
      await measureCli(['run', 'big.yaml', ...args], {
        cwd: dir,
        env,
        during: (child) => {
          const unwatch = sim.service.ledger.watch((e) => {
            if (e.kind === 'charge' && posts() >= KILL_AFTER) child.kill('SIGKILL');
          });
          child.on('close', unwatch);
        },
      });
      // The first submission of an item not sent before the kill (a resend of one that was is no progress of its own).
      const seenKeys = new Set(
        sim.service.ledger
          .of('request')
          .filter((q) => q.method === 'POST')
          .map((q) => q.idempotencyKey),
      );
      let firstNew;
      const r = await runUntil(sim, dir, args, 100, env, (startedAt) => {
        const unwatch = sim.service.ledger.watch((e) => {
          if (
            firstNew === undefined &&
            e.kind === 'request' &&
            e.method === 'POST' &&
            !seenKeys.has(e.idempotencyKey)
          ) {
            firstNew = (Date.now() - startedAt) / 1000;
            unwatch();
          }
        });
      });
      restarts.push(Math.max(r.firstSubmissionSeconds ?? Infinity, firstNew ?? Infinity));
      rss.push(r.peakRssMb);
    } finally {
      await sim.close();
    }
  }
  const median = [...restarts].sort((a, b) => a - b)[Math.floor(restarts.length / 2)];
  const pass = median <= GOAL.firstSubmissionSeconds;
  console.log(
    `scale restart after a SIGKILL at ${KILL_AFTER.toLocaleString('en-US')} submissions (200 in flight), to the first submission: ${minMedian(restarts, 2, ' s')} (goal <= ${GOAL.firstSubmissionSeconds} s), peak RSS ${minMedian(rss, 0, ' MB')}: ${pass ? 'met' : 'MISSED'}`,
  );
  return pass;
}

/** 20,000 images at limits far above a key's: the runner's own cost per item, and whether it slows as the state fills. */
export async function manyImages() {
  const N = 20_000;
  const dir = await writeCatalog(N);
  const limits = { submissionsPerWindow: 100_000, readsPerWindow: 1_000_000, imagesInFlight: 200 };
  // Links live a week of service time: the usual 15 minutes are 250 ms at 3600x, shorter than a busy download queue.
  const sim = await startSimulator({
    announce: false,
    timeScale: 3600,
    seed: 9,
    credits: 1e9,
    keys: [{ label: 'main', dailyCap: 1e9 }],
    imageSeconds: [1, 2],
    linkTtlSeconds: 7 * 86400,
    limits,
  });
  try {
    const env = { GENBATCH_BASE_URL: sim.baseUrl, GENBATCH_API_KEY: sim.apiKey };
    const r = await measureCli(
      [
        'run',
        'big.yaml',
        '--time-scale',
        '3600',
        '--daily-cap',
        '1000000000',
        '--submit-rate',
        '100000/60s',
        '--read-rate',
        '1000000/60s',
        '--max-images-in-flight',
        '200',
      ],
      { cwd: dir, env },
    );
    if (r.code !== 0) throw new Error(`run exited ${r.code}: ${r.stdout}${r.stderr}`);
    const posts = sim.service.ledger
      .of('request')
      .filter((q) => q.method === 'POST')
      .map((q) => q.at);
    const quarter = Math.floor(posts.length / 4);
    const rate = (from, to) => (to - from) / ((posts[to - 1] - posts[from]) / 1000);
    const early = rate(0, quarter);
    const late = rate(posts.length - quarter, posts.length);
    const cpuMs = (r.cpuSeconds * 1000) / N;
    const pass = cpuMs <= GOAL.cpuMsPerItem && late >= early * 0.8;
    console.log(
      `scale ${N.toLocaleString('en-US')} images, limits raised: wall ${fmt(r.wallSeconds)} s, CPU ${fmt(cpuMs)} ms/item (goal <= ${GOAL.cpuMsPerItem}); ` +
        `submissions/s first quarter ${fmt(early, 0)}, last quarter ${fmt(late, 0)} (goal: no slowdown); peak RSS ${fmt(r.peakRssMb, 0)} MB: ${pass ? 'met' : 'MISSED'}`,
    );
    return pass;
  } finally {
    await sim.close();
  }
}
