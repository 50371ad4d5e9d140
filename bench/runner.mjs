// Image jobs through `genbatch run` against the time-scaled simulator.
// Goals: wall time <= 1.03 x the ideal makespan for 200 jobs at 30x, <= 1.10 for 60 at 60x; zero 429s; at most 2.2 reads per job;
// the process gone within 100 ms of its report's last file being written.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startSimulator } from '../dist/simulator/index.js';
import { fmt, measureCli, minMedian, newestWrite } from './measure.mjs';

/** Each case: jobs, time scale, and the makespan ratio it must keep (issue 14's goals). */
const CASES = [
  { jobs: 200, timeScale: 30, ratio: 1.03, runs: 1 },
  { jobs: 60, timeScale: 60, ratio: 1.1, runs: 3 },
];
const GOAL = { readsPerJob: 2.2, exitMs: 100 };
const LIMITS = { submissions: 10, windowSeconds: 60, inFlight: 10 };

/**
 * The best any client could do with these job durations, in this order: the
 * i-th submission waits for the window (at most `submissions` in any window)
 * and for a free slot (at most `inFlight` running).
 */
export function idealMakespanMs(durations, windowMs) {
  const starts = [];
  const ends = [];
  for (let i = 0; i < durations.length; i++) {
    let t = 0;
    if (i >= LIMITS.submissions) t = Math.max(t, starts[i - LIMITS.submissions] + windowMs);
    if (i >= LIMITS.inFlight) t = Math.max(t, [...ends].sort((a, b) => a - b)[i - LIMITS.inFlight]);
    starts.push(t);
    ends.push(t + durations[i]);
  }
  return Math.max(...ends);
}

export async function runnerBench() {
  let ok = true;
  for (const c of CASES) {
    const ratios = [];
    for (let i = 0; i < c.runs; i++) {
      const r = await runOnce(c.jobs, c.timeScale, i);
      ratios.push(r.ratio);
      const pass =
        r.ratio <= c.ratio &&
        r.tooMany === 0 &&
        r.readsPerJob <= GOAL.readsPerJob &&
        r.charges === c.jobs &&
        r.exitMs <= GOAL.exitMs;
      ok &&= pass;
      console.log(
        `runner ${c.jobs} image jobs (time scale ${c.timeScale}x): wall ${fmt(r.wallSeconds)} s, ideal makespan ${fmt(r.idealSeconds)} s, ratio ${fmt(r.ratio, 3)} (goal <= ${c.ratio}); ` +
          `429s ${r.tooMany}; reads/job ${fmt(r.readsPerJob)} (goal <= ${GOAL.readsPerJob}); charges ${r.charges}; exit ${fmt(r.exitMs, 0)} ms after the report was written (goal <= ${GOAL.exitMs}); CPU ${fmt(r.cpuSeconds)} s; peak RSS ${fmt(r.peakRssMb, 0)} MB: ${pass ? 'met' : 'MISSED'}`,
      );
    }
    if (c.runs > 1)
      console.log(
        `runner ${c.jobs} image jobs at ${c.timeScale}x, makespan ratio over ${c.runs} runs: ${minMedian(ratios, 3)}`,
      );
  }
  return ok;
}

async function runOnce(jobs, timeScale, seed) {
  const sim = await startSimulator({ announce: false, timeScale, seed: 3 + seed });
  try {
    const dir = mkdtempSync(join(tmpdir(), 'genbatch-bench-run-'));
    const items = Array.from({ length: jobs }, (_, i) => `  - { id: p${i}, prompt: "product ${i}" }`).join('\n');
    writeFileSync(join(dir, 'm.yaml'), `version: 1\ndefaults: { model: studio-lite }\nitems:\n${items}\n`);
    const env = { GENBATCH_BASE_URL: sim.baseUrl, GENBATCH_API_KEY: sim.apiKey };
    const r = await measureCli(['run', 'm.yaml', '--time-scale', String(timeScale)], { cwd: dir, env });
    if (r.code !== 0) throw new Error(`run exited ${r.code}: ${r.stdout}${r.stderr}`);
    const ledger = sim.service.ledger;
    const charges = ledger.of('charge');
    const durations = charges.map((c) => sim.service.jobs.byId.get(c.jobId)).map((j) => j.endsAt - j.createdAt);
    const idealSeconds = idealMakespanMs(durations, (LIMITS.windowSeconds * 1000) / timeScale) / 1000;
    const reads = ledger.of('request').filter((q) => q.method === 'GET').length;
    // The report (results.jsonl, results.csv, index.html) is written into the output folder after every output.
    const exitMs = r.closedAt - newestWrite(join(dir, 'out'));
    return {
      ...r,
      idealSeconds,
      ratio: r.wallSeconds / idealSeconds,
      readsPerJob: reads / jobs,
      tooMany: ledger.countStatus(429),
      charges: charges.length,
      exitMs,
    };
  } finally {
    await sim.close();
  }
}
