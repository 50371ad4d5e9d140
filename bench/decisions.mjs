// npm run bench decisions: a change of mind among kills. Each seeded run makes drafts, then lives of the real CLI
// (`run --wait-for-decisions --submit-rate 1/1s`, so finals sit queued for a slot) while a reviewer, through the
// review app's own API, approves drafts and then changes its mind on some (rejects them, or clears the decision)
// as their finals wait to be sent; each life ends by SIGKILL or SIGINT at a random instant, and a last plain run
// ends it. A violation is any final whose submission began after the rejection (or clearing) of its draft returned,
// with no approval since: read from the state's record of when each attempt was sent, and checked against the
// simulator's charges. DECISION_RUNS=N (default 26, about 208 lives) runs seeds 1..N; DECISION_SEED=S replays one.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSqlite } from '../dist/store/driver.js';
import { startReviewServer } from '../dist/review/server.js';
import { FolderSink } from '../dist/sink/index.js';
import { startSimulator } from '../dist/simulator/index.js';
import { seeded } from './chaos.mjs';
import { root } from './measure.mjs';

const CLI = join(root, 'dist', 'bin', 'genbatch.js');
const PRODUCTS = 6;
const LIVES = 6;
const GOAL = { lives: 200 };

const MANIFEST = `version: 1
items:
  - id: "draft-{{sku}}"
    rows: products.csv
    model: studio-lite
    prompt: "{{title}}, draft"
  - id: "final-{{sku}}"
    rows: products.csv
    model: studio-xl
    prompt: "{{title}}, final"
    approved: ["draft-{{sku}}"]
`;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** One life of the CLI; `end` stops it (SIGKILL or SIGINT) after `afterMs`, or never. */
async function life(dir, env, args, end) {
  const child = spawn(process.execPath, [CLI, ...args], { cwd: dir, env, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const closed = once(child, 'close');
  const limit = setTimeout(() => child.kill('SIGKILL'), 60_000);
  return { child, stderr: () => stderr, closed: closed.finally(() => clearTimeout(limit)), end };
}

/** One seeded run: its lives, the decisions it made (each with when it returned), and what the checks found. */
export async function mindRun(seed) {
  const r = seeded(seed);
  const sim = await startSimulator({ port: 0, timeScale: 600, announce: false });
  const dir = mkdtempSync(join(tmpdir(), 'genbatch-mind-'));
  writeFileSync(join(dir, 'm.yaml'), MANIFEST);
  const skus = Array.from({ length: PRODUCTS }, (_, i) => `S${i}`);
  writeFileSync(join(dir, 'products.csv'), `sku,title\n${skus.map((s) => `${s},Mug ${s}`).join('\n')}\n`);
  const env = { ...process.env, GENBATCH_BASE_URL: sim.baseUrl, GENBATCH_API_KEY: sim.apiKey };
  for (const k of Object.keys(env)) if (k.startsWith('AWS_') || k === 'FORCE_COLOR') delete env[k];
  const statePath = join(dir, '.genbatch', 'm.sqlite');
  const base = ['run', 'm.yaml', '--time-scale', '600'];
  const log = [];
  const violations = [];
  let lives = 0;
  let review;
  try {
    const drafts = await life(dir, env, base);
    const [code] = await drafts.closed;
    lives++;
    if (code !== 1) violations.push(`the drafts' run ended ${code}: ${drafts.stderr().slice(-300)}`);
    review = await startReviewServer({
      statePath,
      outputs: new FolderSink(join(dir, 'out', 'm')),
      title: 'm',
      budget: null,
    });
    const url = new URL(review.url);
    const token = url.searchParams.get('token');
    const decide = async (items, decision) => {
      const res = await fetch(new URL('/api/review', url), {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-genbatch-token': token },
        body: JSON.stringify({ items: items.map((itemId) => ({ itemId, version: 1 })), decision }),
      });
      const returnedAt = Date.now();
      await res.arrayBuffer();
      for (const gate of items) log.push({ gate, decision, returnedAt });
    };
    const current = new Map(skus.map((s) => [`draft-${s}`, null]));
    for (let l = 0; l < LIVES; l++) {
      const running = await life(dir, env, [...base, '--wait-for-decisions', '--submit-rate', '1/1s']);
      lives++;
      await sleep(200 + r() * 400);
      // Approve the drafts not approved now (some of them), then change its mind on a few while their finals queue.
      const toApprove = [...current].filter(([, d]) => d !== 'approved' && r() < 0.8).map(([g]) => g);
      if (toApprove.length) await decide(toApprove, 'approved');
      for (const g of toApprove) current.set(g, 'approved');
      await sleep(150 + r() * 1200);
      const approved = [...current].filter(([, d]) => d === 'approved').map(([g]) => g);
      const reverse = approved.filter(() => r() < 0.4);
      const rejected = reverse.filter(() => r() < 0.6);
      const cleared = reverse.filter((g) => !rejected.includes(g));
      if (rejected.length) await decide(rejected, 'rejected');
      if (cleared.length) await decide(cleared, null);
      for (const g of rejected) current.set(g, 'rejected');
      for (const g of cleared) current.set(g, null);
      await sleep(r() * 2000);
      running.child.kill(r() < 0.6 ? 'SIGKILL' : 'SIGINT');
      const [exit, by] = await running.closed;
      if (exit !== null && ![0, 1, 130].includes(exit))
        violations.push(`life ${lives} ended ${exit} (${by}): ${running.stderr().slice(-300)}`);
      if (/^\s+at .+:\d+:\d+\)?$/m.test(running.stderr()))
        violations.push(`a stack trace: ${running.stderr().slice(-400)}`);
    }
    const last = await life(dir, env, base);
    const [code2] = await last.closed;
    lives++;
    if (![0, 1].includes(code2)) violations.push(`the last run ended ${code2}: ${last.stderr().slice(-300)}`);
    violations.push(...check(statePath, sim.service.ledger, log));
  } finally {
    await review?.close();
    await sim.close();
  }
  const tally = { approved: 0, rejected: 0, cleared: 0 };
  for (const d of log) tally[d.decision ?? 'cleared']++;
  return { seed, lives, decisions: tally, violations };
}

/**
 * Every final charged was sent while its draft's last decision (as the review app returned it) was an approval:
 * never after a rejection or a clearing returned. Each charge belongs to an attempt the state knows, sent once.
 */
function check(statePath, ledger, log) {
  const violations = [];
  const db = openSqlite(statePath, { readonly: true });
  try {
    const attempts = db
      .prepare("SELECT item_id, n, sent_at, job_id, idempotency_key FROM attempts WHERE item_id LIKE 'final-%'")
      .all();
    const byKey = new Map(attempts.map((a) => [a.idempotency_key, a]));
    const charges = ledger.of('charge').filter((c) => byKey.has(c.idempotencyKey));
    const keys = ledger.of('charge').map((c) => c.idempotencyKey);
    if (new Set(keys).size !== keys.length) violations.push('an idempotency key was charged twice');
    for (const c of charges) {
      const a = byKey.get(c.idempotencyKey);
      const gate = a.item_id.replace('final-', 'draft-');
      if (a.sent_at === null) {
        violations.push(`${a.item_id} attempt ${a.n} was charged and its state says it was never sent`);
        continue;
      }
      const last = log.filter((d) => d.gate === gate && d.returnedAt < a.sent_at).at(-1);
      if (last?.decision !== 'approved')
        violations.push(
          `${a.item_id} attempt ${a.n} was sent at ${a.sent_at}, after ${gate} was ${last?.decision ?? 'cleared'} at ${last?.returnedAt}: charged ${c.credits}`,
        );
    }
    // Items charged that no attempt of the state knows: nothing else here may spend.
    const known = new Set(
      db
        .prepare('SELECT idempotency_key AS k FROM attempts')
        .all()
        .map((x) => x.k),
    );
    for (const c of ledger.of('charge'))
      if (!known.has(c.idempotencyKey)) violations.push(`an unknown charge ${c.jobId}`);
  } finally {
    db.close();
  }
  return violations;
}

export async function decisionsBench() {
  const replay = process.env.DECISION_SEED;
  const seeds = replay
    ? [Number(replay)]
    : Array.from({ length: Number(process.env.DECISION_RUNS ?? 26) }, (_, i) => i + 1);
  const started = Date.now();
  const results = [];
  // Two at a time: each life is a process of its own, mostly waiting for its slow submission rate.
  for (let i = 0; i < seeds.length; i += 2) {
    const batch = await Promise.all(seeds.slice(i, i + 2).map((s) => mindRun(s)));
    for (const res of batch) {
      results.push(res);
      if (res.violations.length)
        console.log(
          `decisions seed ${res.seed}: ${res.violations.length} violation(s): ${res.violations.slice(0, 3).join('; ')}\n  replay: DECISION_SEED=${res.seed} npm run bench decisions`,
        );
    }
  }
  const lives = results.reduce((n, x) => n + x.lives, 0);
  const violations = results.reduce((n, x) => n + x.violations.length, 0);
  const d = { approved: 0, rejected: 0, cleared: 0 };
  for (const x of results) for (const k of Object.keys(d)) d[k] += x.decisions[k];
  const pass = violations === 0 && (replay !== undefined || lives >= GOAL.lives);
  console.log(
    `decisions: ${results.length} seeded runs, ${lives} lives of the CLI (SIGKILL or SIGINT at random), ${d.approved} approvals, ${d.rejected} rejections and ${d.cleared} clearings through the review app while finals sat queued at 1/s; ${violations} violations (a final sent after its draft's rejection or clearing returned); ${Math.round((Date.now() - started) / 1000)} s`,
  );
  console.log(`decisions goal: >= ${GOAL.lives} lives, 0 violations: ${pass ? 'met' : 'MISSED'}`);
  return pass;
}
