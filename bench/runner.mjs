// 200 image jobs through `genbatch run` against the time-scaled simulator.
// Goal: wall time <= 1.10 x the ideal makespan, zero 429s, at most 3 reads per job.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startSimulator } from '../dist/simulator/index.js';
import { fmt, measureCli } from './measure.mjs';

const JOBS = 200;
const TIME_SCALE = 30;
const LIMITS = { submissions: 10, windowMs: 60_000 / TIME_SCALE, inFlight: 10 };
const GOAL = { ratio: 1.1, readsPerJob: 3 };

/**
 * The best any client could do with these job durations, in this order: the
 * i-th submission waits for the window (at most `submissions` in any window)
 * and for a free slot (at most `inFlight` running).
 */
export function idealMakespanMs(durations) {
  const starts = [];
  const ends = [];
  for (let i = 0; i < durations.length; i++) {
    let t = 0;
    if (i >= LIMITS.submissions) t = Math.max(t, starts[i - LIMITS.submissions] + LIMITS.windowMs);
    if (i >= LIMITS.inFlight) t = Math.max(t, [...ends].sort((a, b) => a - b)[i - LIMITS.inFlight]);
    starts.push(t);
    ends.push(t + durations[i]);
  }
  return Math.max(...ends);
}

export async function runnerBench() {
  const sim = await startSimulator({ timeScale: TIME_SCALE, seed: 3 });
  try {
    const dir = mkdtempSync(join(tmpdir(), 'genbatch-bench-run-'));
    const items = Array.from({ length: JOBS }, (_, i) => `  - { id: p${i}, prompt: "product ${i}" }`).join('\n');
    writeFileSync(join(dir, 'm.yaml'), `version: 1\ndefaults: { model: studio-lite }\nitems:\n${items}\n`);
    const env = { GENBATCH_BASE_URL: sim.baseUrl, GENBATCH_API_KEY: sim.apiKey };
    const r = await measureCli(['run', 'm.yaml', '--time-scale', String(TIME_SCALE)], { cwd: dir, env });
    if (r.code !== 0) throw new Error(`run exited ${r.code}: ${r.stdout}${r.stderr}`);
    const ledger = sim.service.ledger;
    const charges = ledger.of('charge');
    const durations = charges.map((c) => sim.service.jobs.byId.get(c.jobId)).map((j) => j.endsAt - j.createdAt);
    const idealSeconds = idealMakespanMs(durations) / 1000;
    const ratio = r.wallSeconds / idealSeconds;
    const reads = ledger.of('request').filter((q) => q.method === 'GET').length;
    const readsPerJob = reads / JOBS;
    const tooMany = ledger.countStatus(429);
    const pass = ratio <= GOAL.ratio && tooMany === 0 && readsPerJob <= GOAL.readsPerJob && charges.length === JOBS;
    console.log(
      `runner ${JOBS} image jobs (time scale ${TIME_SCALE}x): wall ${fmt(r.wallSeconds)} s, ideal makespan ${fmt(idealSeconds)} s, ratio ${fmt(ratio, 3)} (goal <= ${GOAL.ratio}); ` +
        `429s ${tooMany}; reads/job ${fmt(readsPerJob)} (goal <= ${GOAL.readsPerJob}); charges ${charges.length}; CPU ${fmt(r.cpuSeconds)} s; peak RSS ${fmt(r.peakRssMb, 0)} MB: ${pass ? 'met' : 'MISSED'}`,
    );
    return pass;
  } finally {
    await sim.close();
  }
}
