// A key whose real limits are half what genbatch is told (another process on the key, or a key made with lower limits).
// Goals (issue 14): no submission leaves inside an active Retry-After, and the run still finishes with every item charged once.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseRetryAfter } from '../dist/api/index.js';
import { startSimulator } from '../dist/simulator/index.js';
import { fmt, measureCli, minMedian } from './measure.mjs';

const JOBS = 30;
const TIME_SCALE = 20;
const RUNS = 3;
/** A submission the client sent before the 429 reached it arrives just after the 429 left: loopback plus one event-loop turn. */
const ON_THE_WIRE_MS = 50;

export async function pauseBench() {
  let ok = true;
  const inside = [];
  for (let i = 0; i < RUNS; i++) {
    const r = await runOnce(i);
    inside.push(r.sentInside);
    const pass = r.code === 0 && r.sentInside === 0 && r.charges === JOBS && r.twice === 0;
    ok &&= pass;
    console.log(
      `pause: key at half the flags (5 a window against --submit-rate 10 a window, ${JOBS} images at ${TIME_SCALE}x): exit ${r.code}, 429s ${r.refusals}, ` +
        `submissions sent inside an active Retry-After ${r.sentInside} (goal 0), charges ${r.charges}/${JOBS}, charged twice ${r.twice}, wall ${fmt(r.wallSeconds)} s: ${pass ? 'met' : 'MISSED'}`,
    );
  }
  console.log(`pause: submissions inside an active Retry-After over ${RUNS} runs: ${minMedian(inside, 0)}`);
  return ok;
}

async function runOnce(seed) {
  const sim = await startSimulator({
    announce: false,
    timeScale: TIME_SCALE,
    seed: 11 + seed,
    limits: { submissionsPerWindow: 5 },
    meShowsLimits: false,
  });
  try {
    const refusals = [];
    sim.service.tamper = (req, res) => {
      if (req.path === '/images' && res.status === 429) {
        const now = Date.now();
        refusals.push({ at: now, until: now + (parseRetryAfter(res.headers['Retry-After'], now) ?? 0) });
      }
      return undefined;
    };
    const dir = mkdtempSync(join(tmpdir(), 'genbatch-bench-pause-'));
    const items = Array.from({ length: JOBS }, (_, i) => `  - { id: p${i}, prompt: "product ${i}" }`).join('\n');
    writeFileSync(join(dir, 'm.yaml'), `version: 1\ndefaults: { model: studio-lite }\nitems:\n${items}\n`);
    const env = { GENBATCH_BASE_URL: sim.baseUrl, GENBATCH_API_KEY: sim.apiKey };
    const r = await measureCli(
      ['run', 'm.yaml', '--time-scale', String(TIME_SCALE), '--submit-rate', `10/${60 / TIME_SCALE}s`],
      { cwd: dir, env },
    );
    const posts = sim.service.ledger.of('request').filter((q) => q.method === 'POST' && q.path === '/images');
    const sentInside = posts.filter((p) => refusals.some((x) => p.at > x.at + ON_THE_WIRE_MS && p.at < x.until)).length;
    const charges = sim.service.ledger.of('charge');
    const twice = charges.length - new Set(charges.map((c) => c.prompt)).size;
    return { ...r, refusals: refusals.length, sentInside, charges: charges.length, twice };
  } finally {
    await sim.close();
  }
}
