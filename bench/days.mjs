// Three key days of one key on the simulator at 900x (a key day is 96 s; DAYS_SCALE sets another), items of 2, 8 and 100 credits
// (images of studio-lite and studio-xl, 5 s videos of motion-2) with a daily cap of 2,000: how full each
// key day ends, how soon after a day turns the first submission leaves, the 429s, and how close the
// estimate's day-by-day plan comes to what happened.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makePng } from '../dist/simulator/media.js';
import { startSimulator } from '../dist/simulator/index.js';
import { fmt, measureCli } from './measure.mjs';

const SCALE = Number(process.env.DAYS_SCALE ?? 900);
const CAP = 2_000;
const DAY_MS = 86_400_000 / SCALE;
const GOAL = { fill: 0.995, turnServiceSeconds: 1, planError: 0.01 };

/** 680 items, 5,800 credits: three key days, the last one not full. A video every 22 items. */
function manifest() {
  const items = [];
  let lite = 0;
  let xl = 0;
  let video = 0;
  for (let i = 0; i < 680; i++) {
    if (i % 22 === 21 && video < 30) {
      video++;
      items.push(
        `  - { id: v-${i}, type: video, model: motion-2, duration: 5, resolution: 720p, aspectRatio: "16:9", image: first.png, prompt: "clip ${i}" }`,
      );
    } else if ((i % 8 < 3 && xl < 250) || lite >= 400) {
      xl++;
      items.push(`  - { id: x-${i}, model: studio-xl, prompt: "large ${i}" }`);
    } else {
      lite++;
      items.push(`  - { id: l-${i}, model: studio-lite, prompt: "small ${i}" }`);
    }
  }
  return `version: 1\nname: days\nitems:\n${items.join('\n')}\n`;
}

export async function daysBench() {
  const dir = mkdtempSync(join(tmpdir(), 'genbatch-bench-days-'));
  writeFileSync(join(dir, 'days.yaml'), manifest());
  writeFileSync(join(dir, 'first.png'), makePng('first frame'));
  const sim = await startSimulator({
    announce: false,
    timeScale: SCALE,
    seed: 11,
    credits: 1e9,
    keys: [{ label: 'main', dailyCap: CAP }],
    linkTtlSeconds: 7 * 86400,
    uploadTtlSeconds: 7 * 86400,
    // The spec's typical durations, each job the same: the plan is judged on its model, not on the jobs' luck.
    imageSeconds: [50, 50],
    videoSeconds: [330, 330],
  });
  try {
    const env = { GENBATCH_BASE_URL: sim.baseUrl, GENBATCH_API_KEY: sim.apiKey };
    const planned = await measureCli(['estimate', 'days.yaml', '--json', '--daily-cap', String(CAP)], {
      cwd: dir,
      env,
    });
    const plan = JSON.parse(planned.stdout).plan;
    const run = await measureCli(['run', 'days.yaml', '--time-scale', String(SCALE), '--daily-cap', String(CAP)], {
      cwd: dir,
      env,
    });
    if (run.code !== 0) throw new Error(`run exited ${run.code}: ${run.stdout}${run.stderr}`);
    return judge(sim, plan);
  } finally {
    await sim.close();
  }
}

function judge(sim, plan) {
  const charges = sim.service.ledger.of('charge');
  const days = new Map();
  for (const c of charges) {
    const day = Math.floor(c.at / DAY_MS);
    const d = days.get(day) ?? { credits: 0, items: 0 };
    days.set(day, { credits: d.credits + c.credits, items: d.items + 1 });
  }
  const order = [...days.keys()].sort((a, b) => a - b);
  const actual = order.map((day) => days.get(day));
  // Every day but the last is judged for its fill (the last has what was left).
  const fills = actual.slice(0, -1).map((d) => d.credits / CAP);
  const posts = sim.service.ledger
    .of('request')
    .filter((r) => r.method === 'POST' && /\/(images|videos)$/.test(r.path))
    .map((r) => r.at);
  const turns = order.slice(1).map((day) => {
    const start = day * DAY_MS;
    return Math.min(...posts.filter((at) => at >= start)) - start;
  });
  const limited = sim.service.ledger.of('request').filter((r) => r.status === 429).length;
  const plannedDays = plan.days.map((d) =>
    d.keys.reduce((n, k) => ({ credits: n.credits + k.credits, items: n.items + k.items }), { credits: 0, items: 0 }),
  );
  const planErrors = actual.map((d, i) => Math.abs((plannedDays[i]?.credits ?? 0) - d.credits) / d.credits);
  const itemErrors = actual.map((d, i) => Math.abs((plannedDays[i]?.items ?? 0) - d.items) / d.items);
  const fillOk = fills.every((f) => f >= GOAL.fill);
  const turnOk = turns.every((ms) => (ms * SCALE) / 1000 <= GOAL.turnServiceSeconds);
  const creditsOk = plan.endsOnDay === actual.length && planErrors.every((e) => e <= GOAL.planError);
  const itemsOk = itemErrors.every((e) => e <= GOAL.planError);
  const planOk = creditsOk && itemsOk;
  console.log(
    `days ${actual.length} key days (cap ${CAP}, ${SCALE}x): credits per day ${actual.map((d) => d.credits).join(', ')}; fill of the full days ${fills.map((f) => `${fmt(f * 100, 1)}%`).join(', ')} (goal >= ${GOAL.fill * 100}%): ${fillOk ? 'met' : 'MISSED'}`,
  );
  console.log(
    `days day turn to the first submission: ${turns.map((ms) => `${fmt(ms, 1)} ms (${fmt((ms * SCALE) / 1000, 1)} s of service time)`).join(', ')} (goal <= ${GOAL.turnServiceSeconds} s scaled): ${turnOk ? 'met' : 'MISSED'}`,
  );
  console.log(`days 429s: ${limited} (goal 0): ${limited === 0 ? 'met' : 'MISSED'}`);
  console.log(
    `days the estimate's plan: ${plan.endsOnDay} days, per day ${plannedDays.map((d) => `${d.credits} credits / ${d.items} items`).join(', ')}; what happened ${actual.map((d) => `${d.credits} / ${d.items}`).join(', ')}; largest difference in credits ${fmt(Math.max(...planErrors) * 100, 2)}% (${creditsOk ? 'met' : 'MISSED'}), in items ${fmt(Math.max(...itemErrors) * 100, 1)}% (${itemsOk ? 'met' : 'MISSED'}) (goal <= ${GOAL.planError * 100}%)`,
  );
  return fillOk && turnOk && limited === 0 && planOk;
}
