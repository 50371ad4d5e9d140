// npm run bench chaos: whole runs of the real CLI against the simulator, each with a seeded mix of faults
// (outages that refuse, reset or swallow every request (a black hole), answers lost after the charge, 5xx,
// 429 storms, cut and stalled downloads, expired links, a full disk where a tmpfs can be mounted, SIGKILL
// and SIGTERM at random instants), run again
// with the same command until they end; then the simulator's ledger and the output dir are checked
// against the promise: never paid twice, nothing paid for lost, never over a limit, never a hang.
// CHAOS_RUNS=N (default 1000) runs seeds 1..N; CHAOS_SEED=S replays one seed and says what happened.
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { main } from '../dist/cli/program.js';
import { startSimulator } from '../dist/simulator/index.js';
import { makeMp4, makePng } from '../dist/simulator/media.js';
import { fmt, root } from './measure.mjs';

const CLI = join(root, 'dist', 'bin', 'genbatch.js');
const TIME_SCALE = 600;
/** A life that has not ended by then hangs: a violation, and the bench stops there with the seed to replay. */
const LIFE_LIMIT_MS = 120_000;
/** A run must end this soon after its last fault (its own work takes well under a second at this scale). */
const RECOVERY_BOUND_MS = 20_000;
const EXITS = new Set([0, 1, 3, 4, 130]);
const GOAL = { runs: 1000, faults: 3000 };

/** mulberry32: a small seeded generator, so a seed replays the same plan. */
function seeded(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** What one seed does to its run. */
export function planFor(seed, canMount) {
  const r = seeded(seed);
  const between = (lo, hi) => lo + r() * (hi - lo);
  const int = (lo, hi) => Math.floor(between(lo, hi + 1));
  const items = int(5, 12);
  const plan = {
    items,
    outages: [],
    dropRate: r() < 0.4 ? 0.15 : 0,
    failureRate: r() < 0.3 ? 0.1 : 0,
    unavailableRate: r() < 0.2 ? 0.1 : 0,
    serverErrors: r() < 0.4 ? 0.08 : 0,
    storm: r() < 0.35 ? { atCharge: int(1, items), posts: int(3, 12) } : undefined,
    cutDownloads: r() < 0.35 ? 0.25 : 0,
    expiredLinks: r() < 0.3 ? int(1, 3) : 0,
    diskFull: canMount && r() < 0.08,
    signals: [],
    /** An outage longer than this makes the run exit 4; the next life goes on. */
    unreachableMinutes: undefined,
  };
  for (let i = 0, n = int(0, 2); i < n; i++)
    plan.outages.push({
      atCharge: int(1, items),
      ms: Math.round(between(150, 2500)),
      mode: r() < 0.5 ? 'refuse' : 'reset',
    });
  if (plan.outages.length && r() < 0.15) plan.unreachableMinutes = 0.02;
  for (let i = 0, n = int(0, 2); i < n; i++)
    plan.signals.push({
      signal: r() < 0.6 ? 'SIGKILL' : 'SIGTERM',
      afterWork: int(1, 3 * items),
      delayMs: r() < 0.5 ? 0 : Math.round(between(0, 80)),
    });
  // The silent faults (drawn last, so the draws above are as they were): a download that goes quiet mid-body, an
  // outage that reads every request and answers none, and whose swallowed requests stay unanswered after it.
  plan.stalledDownloads = r() < 0.3 ? 0.2 : 0;
  for (const o of plan.outages) if (r() < 0.35) o.mode = 'blackhole';
  // Every run gets two faults at least.
  if (
    plan.outages.length +
      plan.signals.length +
      [
        plan.dropRate,
        plan.failureRate,
        plan.unavailableRate,
        plan.serverErrors,
        plan.storm,
        plan.cutDownloads,
        plan.stalledDownloads,
        plan.expiredLinks,
        plan.diskFull,
      ].filter(Boolean).length <
    2
  ) {
    plan.outages.push({ atCharge: int(1, items), ms: Math.round(between(150, 1500)), mode: 'refuse' });
    plan.signals.push({ signal: 'SIGKILL', afterWork: int(1, 2 * items), delayMs: 0 });
  }
  return plan;
}

function manifestFor(plan) {
  const lines = [];
  for (let i = 0; i < plan.items; i++)
    lines.push(
      `  - { id: item-${i}, prompt: "chaos product ${i}${i < plan.expiredLinks ? ' [sim:expired-link]' : ''}" }`,
    );
  return `version: 1\ndefaults: { model: studio-lite }\nitems:\n${lines.join('\n')}\n`;
}

/** Whether this machine lets a tmpfs be mounted (root, no seccomp in the way): the full-disk fault needs one. */
function tmpfsAvailable() {
  const dir = mkdtempSync(join(tmpdir(), 'genbatch-chaos-mount-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=16k', 'tmpfs', dir], { stdio: 'ignore' });
    execFileSync('umount', [dir], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The work a run does (not its start-up's /me and /models). */
const isWork = (e) =>
  e.kind === 'request'
    ? !/^\/(me|models)\b/.test(e.path)
    : e.kind === 'upload-put' || e.kind === 'download' || e.kind === 'charge';

/** One seed's whole run: the faulty lives, then the same command until it ends; returns its figures and violations. */
export async function chaosRun(seed, { canMount = false, say = () => {} } = {}) {
  const plan = planFor(seed, canMount);
  const faults = {};
  const count = (kind, n = 1) => (faults[kind] = (faults[kind] ?? 0) + n);
  const violations = [];
  const violate = (what) => violations.push(what);
  let lastFaultAt = 0;
  const faultNow = () => (lastFaultAt = Date.now());

  const sim = await startSimulator({
    port: 0,
    timeScale: TIME_SCALE,
    seed,
    dropRate: plan.dropRate,
    failureRate: plan.failureRate,
    unavailableRate: plan.unavailableRate,
  });
  const { service } = sim;
  const dir = mkdtempSync(join(tmpdir(), 'genbatch-chaos-'));
  const outRoot = join(dir, 'out');
  let mounted = false;
  const timers = new Set();
  const later = (ms, fn) => {
    const t = setTimeout(() => {
      timers.delete(t);
      fn();
    }, ms);
    timers.add(t);
  };
  try {
    writeFileSync(join(dir, 'm.yaml'), manifestFor(plan));
    if (plan.diskFull) {
      mkdirSync(outRoot);
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=16k', 'tmpfs', outRoot], { stdio: 'ignore' });
      mounted = true;
      count('full disk');
    }
    // Faults on the service, on while the chaos lasts.
    let charges = 0;
    let storm = 0;
    const unwatch = service.ledger.watch((e) => {
      const fault =
        e.kind === 'dropped-response'
          ? 'answer lost after the charge'
          : e.kind === 'refund' && e.status === 'FAILED'
            ? 'job failed'
            : e.kind === 'request' && e.code === 'UPSTREAM_UNAVAILABLE' && !e.injected
              ? '503'
              : undefined;
      if (fault) {
        count(fault);
        faultNow();
      }
      if (e.kind !== 'charge') return;
      charges++;
      for (const o of plan.outages) {
        if (o.atCharge !== charges || o.done) continue;
        o.done = true;
        count(`outage (${o.mode})`);
        // Started as the charge is recorded: its answer is lost with the connection.
        void sim.outage(o.mode);
        faultNow();
        later(o.ms, () => void sim.restore().then(faultNow));
      }
      if (plan.storm && plan.storm.atCharge === charges && !plan.storm.done) {
        plan.storm.done = true;
        storm = plan.storm.posts;
        count('429 storm');
        faultNow();
      }
    });
    const random = seeded(seed * 7 + 1);
    service.inject = (req) => {
      if (req.method === 'POST' && req.path === '/images' && storm > 0) {
        storm--;
        return {
          status: 429,
          headers: { 'Retry-After': '0.2', 'X-RateLimit-Remaining': '0' },
          body: { error: { code: 'RATE_LIMITED', message: 'injected storm' } },
        };
      }
      if (plan.serverErrors && random() < plan.serverErrors && (req.method === 'POST' || /^\/jobs\//.test(req.path))) {
        count('5xx');
        faultNow();
        const status = random() < 0.5 ? 500 : 502;
        return { status, headers: {}, body: { error: { code: `HTTP_${status}`, message: 'injected' } } };
      }
      return undefined;
    };
    sim.storage.inject = (path) => {
      if (!path.startsWith('/outputs/')) return undefined;
      if (plan.cutDownloads && random() < plan.cutDownloads) {
        count('cut download');
        faultNow();
        return 'truncate';
      }
      if (plan.stalledDownloads && random() < plan.stalledDownloads) {
        count('stalled download');
        faultNow();
        return 'stall';
      }
      return undefined;
    };
    for (let i = 0; i < plan.expiredLinks; i++) count('expired link');

    const env = { ...cleanEnv(), GENBATCH_BASE_URL: sim.baseUrl, GENBATCH_API_KEY: sim.apiKey };
    const args = [
      'run',
      'm.yaml',
      '--time-scale',
      String(TIME_SCALE),
      ...(plan.unreachableMinutes ? ['--unreachable-minutes', String(plan.unreachableMinutes)] : []),
      // A stalled download is abandoned after a second: the 30 s default would be most of a life at this scale.
      ...(plan.stalledDownloads ? ['--idle-timeout', '1'] : []),
    ];
    let recovery = 0;
    const lives = [];
    const lifeOf = async (signal) => {
      const startedAt = Date.now();
      const res = signal ? await childLife(service, dir, env, args, signal) : await inProcessLife(dir, env, args);
      const endedAt = Date.now();
      if (res.hung) {
        violate(`a life did not end within ${LIFE_LIMIT_MS / 1000} s (a hang)`);
        throw Object.assign(new Error('hang'), { fatal: true });
      }
      if (res.signaled) count(signal.signal);
      // A SIGTERM that lands once the run has ended (its last live line said) meets Node tearing the process down, its
      // handlers gone: the run's work and state are complete, whatever the exit status. Any earlier must give 130.
      const ended = /^\d\d:\d\d UTC ended: /m.test(res.stderr ?? '');
      if (res.by === 'SIGTERM' && !ended) violate('SIGTERM killed the process instead of its exiting 130');
      if (!res.killed && !EXITS.has(res.code)) violate(`exit ${res.code}: ${res.stderr.slice(-400)}`);
      if (!res.killed) recovery = Math.max(recovery, endedAt - Math.max(startedAt, lastFaultAt));
      if (!res.killed && endedAt - Math.max(startedAt, lastFaultAt) > RECOVERY_BOUND_MS)
        violate(`a life ended ${((endedAt - lastFaultAt) / 1000).toFixed(1)} s after the last fault`);
      lives.push({ signal: signal?.signal, code: res.code, killed: res.killed, ms: endedAt - startedAt });
      say(
        `life ${lives.length}: ${signal ? `${signal.signal} after ${signal.afterWork} work events` : 'in process'} -> ${res.killed ? 'killed' : `exit ${res.code}`} in ${endedAt - startedAt} ms${res.code ? `\n${res.stderr.trim().split('\n').slice(-8).join('\n')}` : ''}`,
      );
      return res;
    };
    // The chaos: each planned signal gets a life of its own, then lives without until one ends on its own.
    for (const signal of plan.signals) await lifeOf(signal);
    let last = await lifeOf(undefined);
    // Mended: the faults stop, the disk gets room, and the same command runs until the run ends.
    unwatch();
    service.inject = undefined;
    sim.storage.inject = undefined;
    service.opts.dropRate = 0;
    service.opts.failureRate = 0;
    service.opts.unavailableRate = 0;
    for (const t of timers) {
      clearTimeout(t);
      timers.delete(t);
    }
    if (sim.down) await sim.restore();
    if (mounted) execFileSync('mount', ['-o', 'remount,size=4m', outRoot], { stdio: 'ignore' });
    // Exit 1 may leave work for a later run (a download that kept failing, a job unreadable for a while): the same command takes it up.
    for (let i = 0; i < 3 && (![0, 1].includes(last.code) || openItems(dir) > 0); i++) last = await lifeOf(undefined);
    if (![0, 1].includes(last.code))
      violate(`the mended run still ends with exit ${last.code}: ${last.stderr.slice(-400)}`);
    violations.push(...checkLedger(service, dir, plan));
    return { seed, plan, faults, violations, recovery, lives };
  } finally {
    for (const t of timers) clearTimeout(t);
    await sim.close();
    if (mounted) execFileSync('umount', ['-l', outRoot], { stdio: 'ignore' });
    rmSync(dir, { recursive: true, force: true });
  }
}

function cleanEnv() {
  const env = { ...process.env };
  for (const name of Object.keys(env)) if (name.startsWith('GENBATCH_')) delete env[name];
  delete env.FORCE_COLOR;
  return env;
}

/** A life in this process (the CLI's main on streams of its own): no Node start-up. */
async function inProcessLife(dir, env, args) {
  const capture = () => {
    const stream = new PassThrough();
    const text = { value: '' };
    stream.on('data', (d) => (text.value += d));
    return { stream, text };
  };
  const out = capture();
  const err = capture();
  let timer;
  const hung = new Promise((resolve) => (timer = setTimeout(() => resolve('hung'), LIFE_LIMIT_MS)));
  const code = await Promise.race([
    main([process.execPath, CLI, ...args], {
      env,
      cwd: dir,
      stdout: out.stream,
      stderr: err.stream,
      untilStopped: () => Promise.reject(new Error('not here')),
    }),
    hung,
  ]);
  clearTimeout(timer);
  if (code === 'hung') return { hung: true };
  return { code, stderr: err.text.value, killed: false };
}

/** A life of the built CLI, signalled after its `afterWork`-th request that moves the run on. */
async function childLife(service, dir, env, args, { signal, afterWork, delayMs }) {
  const child = spawn(process.execPath, [CLI, ...args], { cwd: dir, env, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const closed = once(child, 'close');
  let seen = 0;
  let signaled = false;
  const send = () => {
    if (child.exitCode === null && child.signalCode === null) signaled = child.kill(signal);
  };
  // Counted from this life's own start-up request on: a request of the life before, handled late, is not this one's
  // (and a signal before Node has run a line of the bin kills any process, whatever it does).
  let started = false;
  const unwatch = service.ledger.watch((e) => {
    if (e.kind === 'request' && e.path === '/me') started = true;
    if (!started || !isWork(e) || ++seen !== afterWork) return;
    if (delayMs === 0) send();
    else setTimeout(send, delayMs);
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), LIFE_LIMIT_MS);
  const [code, by] = await closed;
  clearTimeout(timer);
  unwatch();
  if (by === 'SIGKILL' && !signaled) return { hung: true };
  return { code, by, stderr, signaled, killed: by === 'SIGKILL' };
}

/** Items a later run would still take up. */
function openItems(dir) {
  const db = new Database(join(dir, '.genbatch', 'm.sqlite'), { readonly: true });
  try {
    return db
      .prepare(
        "SELECT count(*) AS n FROM items WHERE state IN ('pending', 'queued', 'submitting', 'maybe_accepted', 'running', 'downloading')",
      )
      .get().n;
  } finally {
    db.close();
  }
}

/** The promise, checked against what the simulator did and what is on disk. */
function checkLedger(service, dir, plan) {
  const violations = [];
  const db = new Database(join(dir, '.genbatch', 'm.sqlite'), { readonly: true });
  try {
    const items = db.prepare('SELECT id, state FROM items ORDER BY seq').all();
    const attempts = db.prepare('SELECT item_id, n, job_id, idempotency_key, status FROM attempts').all();
    const outputs = db.prepare('SELECT * FROM outputs WHERE sha256 IS NOT NULL').all();
    const charges = service.ledger.of('charge');
    const byKey = new Map();
    for (const c of charges) byKey.set(c.idempotencyKey, (byKey.get(c.idempotencyKey) ?? 0) + 1);
    for (const [key, n] of byKey) if (n > 1) violations.push(`idempotency key ${key} charged ${n} times`);
    const jobOf = new Map(attempts.filter((a) => a.job_id).map((a) => [a.job_id, a]));
    for (const c of charges)
      if (!jobOf.has(c.jobId)) violations.push(`charged job ${c.jobId} is unknown to the state (paid for, lost)`);
    // Each item: one charge, plus one per job that ended FAILED or EXPIRED (refunded).
    const refunded = new Set(service.ledger.of('refund').map((r) => r.jobId));
    const perItem = new Map();
    for (const c of charges) {
      const item = jobOf.get(c.jobId)?.item_id ?? '?';
      const e = perItem.get(item) ?? { charged: 0, refunded: 0 };
      e.charged++;
      if (refunded.has(c.jobId)) e.refunded++;
      perItem.set(item, e);
    }
    for (const item of items) {
      const e = perItem.get(item.id) ?? { charged: 0, refunded: 0 };
      const kept = e.charged - e.refunded;
      if (kept > 1) violations.push(`${item.id} paid for ${kept} jobs that did not fail`);
      if (item.state === 'done' && kept !== 1) violations.push(`${item.id} is done with ${kept} jobs kept`);
      if (!['done', 'failed', 'rejected', 'blocked', 'skipped'].includes(item.state))
        violations.push(`${item.id} ended ${item.state}, not final`);
      if (item.state !== 'done' && kept > 0)
        violations.push(`${item.id} ended ${item.state} with a paid job not failed (lost)`);
    }
    // Never over a limit: every 429 the service gave of its own (not injected) is one the pacing should have prevented.
    for (const e of service.ledger.of('request'))
      if (e.status === 429 && !e.injected)
        violations.push(`a 429 ${e.code} the pacing should have prevented (${e.method} ${e.path})`);
    // Every completed output on disk once, verified; no partial file left.
    const outDir = join(dir, 'out', 'm');
    const paths = new Set();
    for (const o of outputs) {
      if (paths.has(o.path)) violations.push(`two outputs claim ${o.path}`);
      paths.add(o.path);
      const file = join(outDir, o.path);
      if (!existsSync(file)) {
        violations.push(`${o.path} is verified in the state but not on disk`);
        continue;
      }
      const bytes = readFileSync(file);
      const job = service.jobs.byId.get(o.job_id);
      const served = job?.type === 'video' ? makeMp4(`${o.job_id}/${o.idx}`) : makePng(`${o.job_id}/${o.idx}`);
      if (!bytes.equals(served) || createHash('sha256').update(bytes).digest('hex') !== o.sha256)
        violations.push(`${o.path} is not the bytes of ${o.job_id}`);
    }
    for (const item of items.filter((i) => i.state === 'done')) {
      const a = attempts.filter((x) => x.item_id === item.id && x.job_id).sort((x, y) => y.n - x.n)[0];
      if (!a || !outputs.some((o) => o.job_id === a.job_id))
        violations.push(`${item.id} is done without a verified output`);
    }
    const partials = existsSync(outDir)
      ? readdirSync(outDir, { recursive: true }).filter((f) => String(f).endsWith('.part'))
      : [];
    if (partials.length) violations.push(`partial files left: ${partials.join(', ')}`);
    void plan;
  } finally {
    db.close();
  }
  return violations;
}

/** Runs seeds `from..to` (one worker); prints a JSON line per seed. */
async function worker(from, to, canMount) {
  for (let seed = from; seed <= to; seed++) {
    let result;
    try {
      result = await chaosRun(seed, { canMount });
    } catch (error) {
      result = {
        seed,
        faults: {},
        violations: [`the run threw: ${error.stack ?? error}`],
        recovery: 0,
        lives: [],
        fatal: Boolean(error.fatal),
      };
    }
    process.stdout.write(
      `${JSON.stringify({ seed: result.seed, faults: result.faults, violations: result.violations, recovery: result.recovery, lives: result.lives.length })}\n`,
    );
    if (result.fatal) process.exit(3);
  }
  // Every run has ended: anything still holding this process open is a leak worth naming.
  console.error(`chaos worker ${from}-${to}: resources after its runs: ${process.getActiveResourcesInfo().join(', ')}`);
  setTimeout(
    () =>
      console.error(
        `chaos worker ${from}-${to}: still alive after its runs: ${process.getActiveResourcesInfo().join(', ')}`,
      ),
    3_000,
  ).unref();
}

export async function chaosBench() {
  const replay = process.env.CHAOS_SEED;
  const canMount = tmpfsAvailable();
  if (replay) {
    const result = await chaosRun(Number(replay), { canMount, say: (line) => console.log(`  ${line}`) });
    console.log(JSON.stringify({ plan: result.plan, faults: result.faults, violations: result.violations }, null, 2));
    return result.violations.length === 0;
  }
  const runs = Number(process.env.CHAOS_RUNS ?? GOAL.runs);
  // Two workers on two cores: a run is mostly waits (outages, the scaled jobs), and the kills need real processes anyway.
  const workers = Math.max(1, Math.min(2, cpus().length));
  const per = Math.ceil(runs / workers);
  const started = Date.now();
  const results = [];
  await Promise.all(
    Array.from({ length: workers }, (_, w) => {
      const from = 1 + w * per;
      const to = Math.min(runs, (w + 1) * per);
      const child = spawn(
        process.execPath,
        [fileURLToPath(import.meta.url), '--worker', String(from), String(to), canMount ? '1' : '0'],
        { stdio: ['ignore', 'pipe', 'inherit'] },
      );
      let buffer = '';
      child.stdout.on('data', (d) => {
        buffer += d;
        for (let nl = buffer.indexOf('\n'); nl >= 0; nl = buffer.indexOf('\n')) {
          const line = buffer.slice(0, nl);
          buffer = buffer.slice(nl + 1);
          const r = JSON.parse(line);
          results.push(r);
          if (r.violations.length)
            console.log(
              `chaos seed ${r.seed}: ${r.violations.length} violation(s): ${r.violations.slice(0, 3).join('; ')}\n  replay: CHAOS_SEED=${r.seed} npm run bench chaos`,
            );
          if (results.length % 100 === 0)
            console.log(`chaos: ${results.length} of ${runs} runs (${Math.round((Date.now() - started) / 1000)} s)`);
        }
      });
      return once(child, 'close');
    }),
  );
  const faults = {};
  for (const r of results) for (const [k, v] of Object.entries(r.faults)) faults[k] = (faults[k] ?? 0) + v;
  const total = Object.values(faults).reduce((a, b) => a + b, 0);
  const violations = results.reduce((n, r) => n + r.violations.length, 0);
  const slowest = results.reduce((m, r) => Math.max(m, r.recovery), 0);
  const lives = results.reduce((n, r) => n + r.lives, 0);
  const pass = results.length >= GOAL.runs && total >= GOAL.faults && violations === 0;
  console.log(
    `chaos: ${results.length} seeded runs (${lives} lives of the CLI), ${total} injected faults, ${violations} invariant violations, slowest end after the last fault ${fmt(slowest / 1000)} s, ${Math.round((Date.now() - started) / 1000)} s in all${canMount ? '' : ' (no tmpfs here: no full-disk faults)'}`,
  );
  console.log(
    `chaos faults by kind: ${Object.entries(faults)
      .sort((a, b) => b[1] - a[1])
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')}`,
  );
  console.log(`chaos goal: >= ${GOAL.runs} runs, >= ${GOAL.faults} faults, 0 violations: ${pass ? 'met' : 'MISSED'}`);
  return pass;
}

if (process.argv[2] === '--worker')
  await worker(Number(process.argv[3]), Number(process.argv[4]), process.argv[5] === '1');
