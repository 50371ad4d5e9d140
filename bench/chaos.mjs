// npm run bench chaos: whole runs of the real CLI against the simulator, each with a seeded mix of faults
// (outages that refuse, reset or swallow every request (a black hole), answers lost after the charge, 5xx,
// 429 storms, cut and stalled downloads, expired links, a full disk where a tmpfs can be mounted, SIGKILL
// and SIGTERM at random instants), run again
// with the same command until they end; then the simulator's ledger and the output dir are checked
// against the promise: never paid twice, nothing paid for lost, never over a limit, never a hang.
// Half the seeds publish to a bucket (s3rver behind a fault proxy) with web copies and checks: it slows
// down, refuses, goes silent, resets and tears answers, and the run is killed at any instant of publication;
// then every output and copy must be in the bucket once, with its recorded sha256, and no staged file left.
// CHAOS_RUNS=N (default 1000) runs seeds 1..N; CHAOS_ONLY=bucket runs the first N seeds that publish to a bucket
// (the last mile alone); CHAOS_SEED=S replays one seed and says what happened.
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { openSqlite } from '../dist/store/driver.js';
import { Store } from '../dist/store/index.js';
import { main } from '../dist/cli/program.js';
import { S3BucketClient } from '../dist/sink/bucket/s3-bucket-client.js';
import { startSimulator } from '../dist/simulator/index.js';
import { makeMp4, makePng } from '../dist/simulator/media.js';
import { privatePort, startFaultProxy, startWholeBucket } from './bucket.mjs';
import { fmt, root } from './measure.mjs';

const CLI = join(root, 'dist', 'bin', 'genbatch.js');
const TIME_SCALE = 600;
/** A life that has not ended by then hangs: a violation, and the bench stops there with the seed to replay. */
const LIFE_LIMIT_MS = 120_000;
/** A run must end this soon after its last fault (its own work takes well under a second at this scale). */
const RECOVERY_BOUND_MS = 20_000;
const EXITS = new Set([0, 1, 3, 4, 130]);
const GOAL = { runs: 1000, faults: 3000, bucketLives: 1000, termExitMs: 2_000, backToWorkMs: 5_000 };
/** The prefix bucket lives publish under. */
const PREFIX = 'chaos';

/** mulberry32: a small seeded generator, so a seed replays the same plan. */
export function seeded(seed) {
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
  // The last mile (drawn after everything above, so those draws are as they were).
  plan.bucket = r() < 0.5 ? bucketPlanFor(r, items, int, between) : undefined;
  if (plan.bucket) plan.diskFull = false;
  // Gates, drawn last: a final for each of the first items, sent only once its draft is approved. Decisions are made
  // and cleared at random before each life (their own draws, so a replay makes the same ones).
  plan.gated = r() < 0.5 ? int(1, Math.min(3, items)) : 0;
  return plan;
}

/** A bucket's faults for one seed: rates by request, spells of refusal and silence, kills counted in its PUTs. */
function bucketPlanFor(r, items, int, between) {
  const bucket = {
    slowDown: r() < 0.6 ? 0.15 : 0,
    resets: r() < 0.4 ? 0.08 : 0,
    tornReads: r() < 0.4 ? 0.2 : 0,
    spells: [],
    signals: [],
    flat: int(0, items - 1),
  };
  for (let i = 0, n = int(0, 2); i < n; i++)
    bucket.spells.push({
      afterPuts: int(1, 2 * items),
      ms: Math.round(between(300, 3000)),
      mode: r() < 0.5 ? 'refuse' : 'silent',
    });
  for (let i = 0, n = int(1, 3); i < n; i++)
    bucket.signals.push({
      signal: r() < 0.7 ? 'SIGKILL' : 'SIGTERM',
      afterPuts: int(1, 3 * items),
      delayMs: r() < 0.5 ? 0 : Math.round(between(0, 60)),
    });
  // Drawn last (the draws above are as they were): a spell followed at once by others (outages back to back), and a
  // life that meets a spell at one of its writes and gets a SIGTERM inside it.
  if (bucket.spells.length && r() < 0.35)
    bucket.spells[0].chained = Array.from({ length: int(1, 2) }, () => ({
      ms: Math.round(between(300, 3000)),
      mode: r() < 0.5 ? 'refuse' : 'silent',
    }));
  if (r() < 0.4)
    bucket.signals.push({
      signal: 'SIGTERM',
      afterPuts: int(1, 2 * items),
      delayMs: Math.round(between(0, 500)),
      spell: { ms: Math.round(between(1000, 4000)), mode: r() < 0.5 ? 'refuse' : 'silent' },
    });
  return bucket;
}

function manifestFor(plan) {
  const lines = [];
  const flat = (i) => (plan.bucket?.flat === i ? ' [sim:flat]' : '');
  for (let i = 0; i < plan.items; i++)
    lines.push(
      `  - { id: item-${i}, prompt: "chaos product ${i}${i < plan.expiredLinks ? ' [sim:expired-link]' : ''}${flat(i)}" }`,
    );
  // With a bucket: two web copies of each output, and the blank check (one item's frames are flat).
  const finishing = plan.bucket
    ? 'derivatives:\n  - { format: webp, width: 96 }\n  - { format: jpeg, width: 64 }\nchecks: { blank: true }\n'
    : '';
  for (let i = 0; i < (plan.gated ?? 0); i++)
    lines.push(`  - { id: final-${i}, prompt: "chaos final ${i}", approved: [item-${i}] }`);
  return `version: 1\ndefaults: { model: studio-lite }\n${finishing}items:\n${lines.join('\n')}\n`;
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
    // It stands in for the real service (it does not say it is a simulator): the state is at the real run's place.
    announce: false,
    // Its refusals stop its listening: a port outside the ephemeral range is not handed to another worker meanwhile.
    port: await privatePort(),
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
  // The bucket lives' bucket, and who hears each write that reaches its proxy (the kills counted in them).
  const bucket = plan.bucket ? await startBucket(plan.bucket, seed, count, () => faultNow()) : undefined;
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

    const env = {
      ...cleanEnv(),
      GENBATCH_BASE_URL: sim.baseUrl,
      GENBATCH_API_KEY: sim.apiKey,
      ...(bucket ? bucket.proxy.env : {}),
    };
    const args = [
      'run',
      'm.yaml',
      '--time-scale',
      String(TIME_SCALE),
      ...(plan.unreachableMinutes ? ['--unreachable-minutes', String(plan.unreachableMinutes)] : []),
      // A stalled download or a silent bucket request is abandoned after a second: the 30 s default would be most
      // of a life at this scale.
      ...(plan.stalledDownloads || bucket ? ['--idle-timeout', '1'] : []),
      ...(bucket ? ['--out', `s3://catalog/${PREFIX}`] : []),
    ];
    let recovery = 0;
    // From a SIGTERM to the process's exit, and from the bucket's return to the next publication: the slowest of each.
    let termExit = 0;
    const lives = [];
    const decisions = [];
    const decide = plan.gated ? decider(seed, dir, plan.gated, decisions) : () => {};
    const lifeOf = async (signal) => {
      decide();
      const startedAt = Date.now();
      const res = signal
        ? await childLife(service, dir, env, args, signal, bucket)
        : await inProcessLife(dir, env, args);
      const endedAt = Date.now();
      bucket?.lifeEnded();
      if (signal?.signal === 'SIGTERM' && res.exitMs !== undefined && res.code === 130)
        termExit = Math.max(termExit, res.exitMs);
      if (res.hung) {
        violate(`a life did not end within ${LIFE_LIMIT_MS / 1000} s (a hang): ${(res.stderr ?? '').slice(-1500)}`);
        say(`hung life's stderr:\n${res.stderr ?? '(in process)'}`);
        throw Object.assign(new Error('hang'), { fatal: true });
      }
      if (res.signaled) count(signal.signal);
      // A SIGTERM that lands once the run has ended (its last live line said) meets Node tearing the process down, its
      // handlers gone: the run's work and state are complete, whatever the exit status. Any earlier must give 130.
      const ended = /^\d\d:\d\d UTC ended: /m.test(res.stderr ?? '');
      const lateTerm = res.by === 'SIGTERM' && ended;
      if (res.by === 'SIGTERM' && !ended) violate('SIGTERM killed the process instead of its exiting 130');
      // A late SIGTERM leaves no exit code (null) by Node's own teardown: its state is checked like any other.
      if (!res.killed && !lateTerm && !EXITS.has(res.code)) violate(`exit ${res.code}: ${res.stderr.slice(-400)}`);
      if (/^\s+at .+:\d+:\d+\)?$/m.test(res.stderr ?? ''))
        violate(`a stack trace was printed: ${res.stderr.slice(-600)}`);
      if (/non-retryable|Warning:/.test(res.stderr ?? ''))
        violate(`a library's own words reached stderr: ${res.stderr.slice(-600)}`);
      if (!res.killed) recovery = Math.max(recovery, endedAt - Math.max(startedAt, lastFaultAt));
      if (!res.killed && endedAt - Math.max(startedAt, lastFaultAt) > RECOVERY_BOUND_MS)
        violate(`a life ended ${((endedAt - lastFaultAt) / 1000).toFixed(1)} s after the last fault`);
      lives.push({
        signal: signal?.signal,
        code: res.code,
        killed: res.killed,
        ms: endedAt - startedAt,
        bucket: Boolean(bucket),
      });
      say(
        `life ${lives.length}: ${signal ? `${signal.signal} after ${signal.afterWork ?? signal.afterPuts} ${signal.afterPuts ? 'bucket writes' : 'work events'}` : 'in process'} -> ${res.killed ? 'killed' : `exit ${res.code}`} in ${endedAt - startedAt} ms${res.code ? `\n${res.stderr.trim().split('\n').slice(-8).join('\n')}` : ''}`,
      );
      return res;
    };
    // The chaos: each planned signal gets a life of its own, then lives without until one ends on its own.
    for (const signal of plan.signals) await lifeOf(signal);
    // Kills at any instant of publication: counted in the writes that reach the bucket.
    for (const signal of plan.bucket?.signals ?? []) await lifeOf(signal);
    let last = await lifeOf(undefined);
    // Mended: the faults stop, the disk gets room, and the same command runs until the run ends.
    unwatch();
    service.inject = undefined;
    sim.storage.inject = undefined;
    service.options.dropRate = 0;
    service.options.failureRate = 0;
    service.options.unavailableRate = 0;
    for (const t of timers) {
      clearTimeout(t);
      timers.delete(t);
    }
    if (sim.down) await sim.restore();
    await bucket?.mend();
    if (mounted) execFileSync('mount', ['-o', 'remount,size=4m', outRoot], { stdio: 'ignore' });
    // Exit 1 may leave work for a later run (a download that kept failing, a job unreadable for a while): the same command takes it up.
    for (let i = 0; i < 3 && (![0, 1].includes(last.code) || openItems(dir) > 0); i++) last = await lifeOf(undefined);
    if (![0, 1].includes(last.code))
      violate(`the mended run still ends with exit ${last.code}: ${last.stderr.slice(-400)}`);
    violations.push(...checkLedger(service, dir, plan), ...checkGates(dir, decisions));
    if (bucket) violations.push(...(await checkBucket(service, dir, bucket, last.code)));
    return {
      seed,
      plan,
      faults,
      violations,
      recovery,
      lives,
      termExit,
      backToWork: bucket?.returns.slowest ?? 0,
      decisions: { approved: 0, rejected: 0, cleared: 0, ...tally(decisions) },
    };
  } finally {
    for (const t of timers) clearTimeout(t);
    await sim.close();
    // The harness's own bucket must not hold a worker for good: a close that does not end is said, and left.
    if (bucket && (await bounded(bucket.close(), 20_000)) === 'late')
      console.error(`chaos seed ${seed}: the test bucket did not close within 20 s (left open)`);
    if (mounted) execFileSync('umount', ['-l', outRoot], { stdio: 'ignore' });
    rmSync(dir, { recursive: true, force: true });
  }
}

/** `promise`, or 'late' once `ms` have passed. */
function bounded(promise, ms) {
  let timer;
  const late = new Promise((resolve) => (timer = setTimeout(() => resolve('late'), ms)));
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
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

/**
 * A life of the built CLI, signalled after its `afterWork`-th request that moves the run on, or its
 * `afterPuts`-th write to the bucket (heard through `writes`).
 */
async function childLife(service, dir, env, args, { signal, afterWork, afterPuts, delayMs, spell }, bucket) {
  const writes = bucket?.writes;
  const child = spawn(process.execPath, [CLI, ...args], { cwd: dir, env, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const closed = once(child, 'close');
  let seen = 0;
  let signaled = false;
  let sentAt;
  const send = () => {
    if (child.exitCode === null && child.signalCode === null) {
      signaled = child.kill(signal);
      sentAt = Date.now();
    }
  };
  // A spell of the bucket's begins at this life's write, and the signal lands inside it.
  const armed = () => {
    if (spell && bucket) bucket.spell(spell);
  };
  // Counted from this life's own start-up request on: a request of the life before, handled late, is not this one's
  // (and a signal before Node has run a line of the bin kills any process, whatever it does).
  let started = false;
  const counted = () => {
    if (!started || ++seen !== (afterWork ?? afterPuts)) return;
    armed();
    if (delayMs === 0) send();
    else setTimeout(send, delayMs);
  };
  const unwatchService = service.ledger.watch((e) => {
    if (e.kind === 'request' && e.path === '/me') started = true;
    if (afterWork !== undefined && isWork(e)) counted();
  });
  if (afterPuts !== undefined) writes?.add(counted);
  const unwatch = () => {
    unwatchService();
    writes?.delete(counted);
  };
  const timer = setTimeout(() => child.kill('SIGKILL'), LIFE_LIMIT_MS);
  const [code, by] = await closed;
  const exitMs = sentAt === undefined ? undefined : Date.now() - sentAt;
  clearTimeout(timer);
  unwatch();
  if (by === 'SIGKILL' && !signaled) return { hung: true, stderr };
  return { code, by, stderr, signaled, killed: by === 'SIGKILL', exitMs };
}

/** Items a later run would still take up. */
function openItems(dir) {
  const db = openSqlite(join(dir, '.genbatch', 'm.sqlite'), { readonly: true });
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

/**
 * Before each life, each draft a final waits on, once made: approved, rejected or its decision cleared, at random
 * (a replay makes the same draws), as genbatch review or approve would record it; each logged with its time.
 */
function decider(seed, dir, gated, log) {
  const r = seeded(seed ^ 0x9e3779b9);
  return () => {
    const path = join(dir, '.genbatch', 'm.sqlite');
    if (!existsSync(path)) return;
    const store = Store.openForReview(path);
    try {
      for (let i = 0; i < gated; i++) {
        const gate = `item-${i}`;
        const current = store.reviews.current(gate);
        const pick = r();
        if (!current || current.verified < current.outputs || pick < 0.2) continue;
        const decision = pick < 0.6 ? 'approved' : pick < 0.8 ? 'rejected' : null;
        store.decisions.decide({ itemId: gate, version: current.version, decision, by: 'chaos', now: Date.now() });
        log.push({ at: Date.now(), gate, decision });
      }
    } finally {
      store.close();
    }
  };
}

/** The decisions logged, by kind. */
function tally(log) {
  const out = {};
  for (const d of log) {
    const k = d.decision ?? 'cleared';
    out[k] = (out[k] ?? 0) + 1;
  }
  return out;
}

/** Never a gated item paid for unapproved: each final's attempts were sent while its draft's last decision was an approval. */
function checkGates(dir, log) {
  if (!log.length && !existsSync(join(dir, '.genbatch', 'm.sqlite'))) return [];
  const db = openSqlite(join(dir, '.genbatch', 'm.sqlite'), { readonly: true });
  try {
    const sent = db
      .prepare("SELECT item_id, n, sent_at FROM attempts WHERE item_id LIKE 'final-%' AND sent_at IS NOT NULL")
      .all();
    const violations = [];
    for (const a of sent) {
      const gate = `item-${a.item_id.slice('final-'.length)}`;
      const last = log.filter((d) => d.gate === gate && d.at <= a.sent_at).at(-1);
      if (last?.decision !== 'approved')
        violations.push(`${a.item_id} attempt ${a.n} was sent while ${gate} was ${last?.decision ?? 'undecided'}`);
    }
    return violations;
  } finally {
    db.close();
  }
}

/** The promise, checked against what the simulator did and what is on disk. */
function checkLedger(service, dir, plan) {
  const violations = [];
  const db = openSqlite(join(dir, '.genbatch', 'm.sqlite'), { readonly: true });
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
      // Waiting for a decision is where a gated item may end: nothing of it was sent.
      if (!['done', 'failed', 'rejected', 'blocked', 'skipped', 'waiting'].includes(item.state))
        violations.push(`${item.id} ended ${item.state}, not final`);
      if (item.state !== 'done' && kept > 0)
        violations.push(`${item.id} ended ${item.state} with a paid job not failed (lost)`);
    }
    // Never over a limit: every 429 the service gave of its own (not injected) is one the pacing should have prevented.
    for (const e of service.ledger.of('request'))
      if (e.status === 429 && !e.injected)
        violations.push(`a 429 ${e.code} the pacing should have prevented (${e.method} ${e.path})`);
    // Every completed output on disk once, verified; no partial file left (a bucket's are checked in it).
    const outDir = join(dir, 'out', 'm');
    const paths = new Set();
    for (const o of plan.bucket ? [] : outputs) {
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

/**
 * The seed's bucket: s3rver with whole PUTs behind the fault proxy, which meets each request with the plan's
 * faults (a seeded draw each) and its spells of refusal or silence, counted in the writes; `writes` hears each
 * write (the kills at publication); `mend` ends the faults.
 */
async function startBucket(plan, seed, count, faultNow) {
  const store = await startWholeBucket();
  const proxy = await startFaultProxy(store.env);
  const random = seeded(seed * 13 + 5);
  const writes = new Set();
  let puts = 0;
  let silentUntil = 0;
  let mended = false;
  // The bucket's return after a spell, while a write met the spell: the next write of what waited is timed from it.
  // What waited is an output or a copy when one met the spell or they were flowing as it began; else it is the run's
  // own write (the start's look that the bucket takes writes, a snapshot), and the run's first write after is timed:
  // the next output may be a generation away, which is the service's time, not the bucket's.
  const returns = { at: undefined, blocked: 0, objects: false, slowest: 0, lastPublished: 0 };
  const OBJECT = /\.(png|webp|jpg)$/;
  const back = () => {
    trace('bucket back', returns.blocked, returns.objects);
    if (returns.blocked > 0) returns.at = Date.now();
    faultNow();
  };
  const fault = (kind, way) => {
    count(kind);
    faultNow();
    return way;
  };
  /** A spell of refusal or silence, then each spell chained after it at once. */
  const spell = ({ mode, ms, chained = [] }) => {
    count(`bucket ${mode === 'refuse' ? 'refused' : 'silent'}`);
    if (chained.length) count('bucket outages back to back');
    faultNow();
    returns.at = undefined;
    // Publications were flowing as it began: some wait on it (a refused write never reaches the proxy to be counted).
    returns.blocked = Date.now() - returns.lastPublished < 1_500 ? 1 : 0;
    returns.objects = returns.blocked > 0;
    const next = () => (chained.length ? spell({ ...chained[0], chained: chained.slice(1) }) : back());
    if (mode === 'refuse') void proxy.refuseFor(ms).then(() => !mended && next());
    else {
      silentUntil = Date.now() + ms;
      const timer = setTimeout(() => !mended && next(), ms);
      timer.unref?.();
    }
  };
  const t0 = Date.now();
  const trace = process.env.CHAOS_TRACE ? (...a) => console.error(`+${Date.now() - t0}ms`, ...a) : () => {};
  proxy.decide = (method, path) => {
    const way = decide(method, path);
    trace(method, path, way);
    return way;
  };
  const decide = (method, path) => {
    if (mended) return 'pass';
    const write = method === 'PUT' || method === 'POST';
    if (write) {
      puts++;
      for (const w of [...writes]) w();
      for (const planned of plan.spells) {
        if (planned.afterPuts !== puts || planned.done) continue;
        planned.done = true;
        spell(planned);
      }
    }
    if (Date.now() < silentUntil) {
      if (write) returns.blocked++;
      if (write && OBJECT.test(path)) returns.objects = true;
      return 'silent';
    }
    // The first write of what waited that goes through after the bucket came back.
    if (write && (OBJECT.test(path) || (returns.at !== undefined && !returns.objects))) {
      if (returns.at !== undefined) returns.slowest = Math.max(returns.slowest, Date.now() - returns.at);
      returns.at = undefined;
      if (OBJECT.test(path)) returns.lastPublished = Date.now();
    }
    if (write && plan.slowDown && random() < plan.slowDown) return fault('bucket slow-down', 'slow-down');
    if (plan.resets && random() < plan.resets) return fault('bucket reset', 'reset');
    if (!write && method === 'GET' && plan.tornReads && random() < plan.tornReads)
      return fault('bucket torn read', 'torn');
    return 'pass';
  };
  return {
    proxy,
    store,
    writes,
    spell,
    returns,
    /** A life ended: a return not yet followed by a publication in it is not timed across lives. */
    lifeEnded: () => {
      returns.at = undefined;
    },
    mend: async () => {
      mended = true;
      silentUntil = 0;
      // A refusal still under way ends by itself: wait for the port to listen again.
      for (let i = 0; i < 100 && proxy.seen.refused && !(await listening(proxy.env.AWS_ENDPOINT_URL)); i++)
        await new Promise((r) => setTimeout(r, 50));
    },
    close: async () => {
      await proxy.close().catch(() => undefined);
      await store.close();
    },
  };
}

async function listening(url) {
  try {
    await fetch(url, { method: 'HEAD' });
    return true;
  } catch {
    return false;
  }
}

/**
 * The last mile's promise, against the bucket itself: every verified output and every web copy is there once,
 * with the bytes and sha256 recorded; none is owed or waiting after a run that ended 0 or 1; no staged file is left
 * after an exit 0; the flat frame, when its item is done, is rejected with its reason.
 */
async function checkBucket(service, dir, bucket, lastCode) {
  const violations = [];
  const s3 = new S3BucketClient({ bucket: 'catalog', idleTimeoutMs: 10_000, env: bucket.store.env });
  const db = openSqlite(join(dir, '.genbatch', 'm.sqlite'), { readonly: true });
  try {
    const outputs = db.prepare('SELECT * FROM outputs WHERE sha256 IS NOT NULL').all();
    const copies = db.prepare('SELECT * FROM derivatives').all();
    const ended = [0, 1].includes(lastCode);
    const created = new Map();
    for (const k of bucket.store.created) created.set(k, (created.get(k) ?? 0) + 1);
    const inBucket = async (path, sha256, what) => {
      const key = `${PREFIX}/${path}`;
      const head = await s3.head(key);
      if (!head) {
        if (ended) violations.push(`${what} ${path} is not in the bucket`);
        return undefined;
      }
      if (head.sha256 !== sha256) violations.push(`${what} ${path} carries sha256 ${head.sha256}, not ${sha256}`);
      const got = await s3.get(key);
      const chunks = [];
      for await (const c of got.body) chunks.push(c);
      const bytes = Buffer.concat(chunks);
      if (createHash('sha256').update(bytes).digest('hex') !== sha256)
        violations.push(`${what} ${path} in the bucket is not the bytes recorded`);
      if ((created.get(key) ?? 0) > 1)
        violations.push(`${what} ${path} was put ${created.get(key)} times (overwritten)`);
      return bytes;
    };
    for (const o of outputs) {
      if (ended && o.published_at === null) violations.push(`output ${o.path} is not published after exit ${lastCode}`);
      const bytes = await inBucket(o.path, o.sha256, 'output');
      const served = makePng(
        `${o.job_id}/${o.idx}`,
        192,
        192,
        service.jobs.byId.get(o.job_id)?.prompt.includes('[sim:flat]'),
      );
      if (bytes && !bytes.equals(served)) violations.push(`output ${o.path} is not the bytes of ${o.job_id}`);
    }
    for (const c of copies) {
      if (ended && c.published_at === null) violations.push(`copy ${c.path} is not published after exit ${lastCode}`);
      await inBucket(c.path, c.sha256, 'copy');
    }
    const owed = db
      .prepare(
        `SELECT count(*) AS n FROM outputs o WHERE o.sha256 IS NOT NULL AND o.superseded_at IS NULL
           AND (SELECT count(*) FROM derivatives d WHERE d.job_id = o.job_id AND d.idx = o.idx) < 2`,
      )
      .get().n;
    if (ended && owed) violations.push(`${owed} outputs lack a web copy after exit ${lastCode}`);
    const staging = join(dir, '.genbatch', 'm.staging');
    const left = existsSync(staging)
      ? readdirSync(staging, { recursive: true }).filter((f) => /\.(png|webp|jpg)$/.test(String(f)))
      : [];
    if (lastCode === 0 && left.length) violations.push(`staged files left after exit 0: ${left.join(', ')}`);
    const flat = db
      .prepare(
        `SELECT i.id, r.note FROM items i LEFT JOIN reviews r ON r.item_id = i.id
         WHERE i.state = 'done' AND i.spec LIKE '%[sim:flat]%'`,
      )
      .all();
    for (const f of flat)
      if (!/blank: a flat image/.test(f.note ?? '')) violations.push(`flat ${f.id} is not rejected with its reason`);
  } finally {
    db.close();
  }
  return violations;
}

/** Runs its seeds (one worker); prints a JSON line per seed. */
async function worker(seeds, canMount) {
  for (const seed of seeds) {
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
        termExit: 0,
        backToWork: 0,
        fatal: Boolean(error.fatal),
      };
    }
    process.stdout.write(
      `${JSON.stringify({ seed: result.seed, faults: result.faults, violations: result.violations, recovery: result.recovery, lives: result.lives.length, bucketLives: result.lives.filter((l) => l.bucket).length, termExit: result.termExit, backToWork: result.backToWork, decisions: result.decisions })}\n`,
    );
    if (result.fatal) process.exit(3);
  }
  // Every run has ended: anything still holding this process open is a leak worth naming.
  console.error(
    `chaos worker ${seeds[0]}-${seeds.at(-1)}: resources after its runs: ${process.getActiveResourcesInfo().join(', ')}`,
  );
  setTimeout(
    () =>
      console.error(
        `chaos worker ${seeds[0]}-${seeds.at(-1)}: still alive after its runs: ${process.getActiveResourcesInfo().join(', ')}`,
      ),
    3_000,
  ).unref();
}

export async function chaosBench() {
  const replay = process.env.CHAOS_SEED;
  const canMount = tmpfsAvailable();
  if (replay) {
    const result = await chaosRun(Number(replay), { canMount, say: (line) => console.log(`  ${line}`) });
    const { plan, faults, violations, termExit, backToWork } = result;
    console.log(JSON.stringify({ plan, faults, violations, termExitMs: termExit, backToWorkMs: backToWork }, null, 2));
    return result.violations.length === 0;
  }
  const runs = Number(process.env.CHAOS_RUNS ?? GOAL.runs);
  // Two workers on two cores: a run is mostly waits (outages, the scaled jobs), and the kills need real processes anyway.
  const workers = Math.max(1, Math.min(2, cpus().length));
  const seeds = seedsToRun(runs, canMount, process.env.CHAOS_ONLY === 'bucket');
  const per = Math.ceil(seeds.length / workers);
  const started = Date.now();
  const results = [];
  await Promise.all(
    Array.from({ length: workers }, (_, w) => {
      const mine = seeds.slice(w * per, (w + 1) * per);
      const child = spawn(
        process.execPath,
        [fileURLToPath(import.meta.url), '--worker', mine.join(','), canMount ? '1' : '0'],
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
          if (results.length % 50 === 0)
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
  const worst = (key) =>
    results.reduce((m, r) => (r[key] > m.ms ? { ms: r[key], seed: r.seed } : m), { ms: 0, seed: 0 });
  const term = worst('termExit');
  const back = worst('backToWork');
  const figuresMet = term.ms <= GOAL.termExitMs && back.ms <= GOAL.backToWorkMs;
  const lives = results.reduce((n, r) => n + r.lives, 0);
  const bucketLives = results.reduce((n, r) => n + (r.bucketLives ?? 0), 0);
  // The last mile alone is judged by its lives; a whole run by its runs and faults too.
  const bucketOnly = process.env.CHAOS_ONLY === 'bucket';
  // Fewer runs asked (CHAOS_RUNS) are held to their share of the faults and bucket lives.
  const share = bucketOnly ? 1 : runs / GOAL.runs;
  const goal = { faults: Math.ceil(GOAL.faults * share), bucketLives: Math.ceil(GOAL.bucketLives * share) };
  const pass =
    violations === 0 &&
    figuresMet &&
    bucketLives >= goal.bucketLives &&
    (bucketOnly || (results.length >= runs && total >= goal.faults));
  console.log(
    `chaos: ${results.length} seeded runs (${lives} lives of the CLI, ${bucketLives} of them publishing to a faulty bucket), ${total} injected faults, ${violations} invariant violations, slowest end after the last fault ${fmt(slowest / 1000)} s, ${Math.round((Date.now() - started) / 1000)} s in all${canMount ? '' : ' (no tmpfs here: no full-disk faults)'}`,
  );
  console.log(
    `chaos: slowest exit after a SIGTERM ${fmt(term.ms / 1000)} s (seed ${term.seed}; goal <= ${GOAL.termExitMs / 1000} s); slowest write of what waited after the bucket came back ${fmt(back.ms / 1000)} s (seed ${back.seed}; goal <= ${GOAL.backToWorkMs / 1000} s)`,
  );
  console.log(
    `chaos faults by kind: ${Object.entries(faults)
      .sort((a, b) => b[1] - a[1])
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')}`,
  );
  const decided = { approved: 0, rejected: 0, cleared: 0 };
  for (const r of results) for (const k of Object.keys(decided)) decided[k] += r.decisions?.[k] ?? 0;
  console.log(
    `chaos decisions on gates, before lives (kills among them): ${decided.approved} approved, ${decided.rejected} rejected, ${decided.cleared} cleared, in ${results.filter((r) => r.decisions && Object.values(r.decisions).some(Boolean)).length} runs; a gated item sent unapproved is a violation`,
  );
  console.log(
    `chaos goal: ${bucketOnly ? '' : `${runs} runs, >= ${goal.faults} faults, `}>= ${goal.bucketLives} bucket lives, 0 violations, the figures above: ${pass ? 'met' : 'MISSED'}`,
  );
  return pass;
}

/** Seeds 1..runs, or with `bucketOnly` the first `runs` seeds whose plan publishes to a bucket. */
function seedsToRun(runs, canMount, bucketOnly) {
  if (!bucketOnly) return Array.from({ length: runs }, (_, i) => i + 1);
  const seeds = [];
  for (let seed = 1; seeds.length < runs; seed++) if (planFor(seed, canMount).bucket) seeds.push(seed);
  return seeds;
}

if (process.argv[2] === '--worker') await worker(process.argv[3].split(',').map(Number), process.argv[4] === '1');
