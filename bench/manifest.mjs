// Validate and estimate a generated 100,000-item CSV manifest. Goal: each under 5 s and 300 MB.
import { createWriteStream, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { fmt, measureCli } from './measure.mjs';

const ROWS = 100_000;
const GOAL = { seconds: 5, rssMb: 300 };

export async function manifestBench() {
  const dir = mkdtempSync(join(tmpdir(), 'genbatch-bench-manifest-'));
  const csv = createWriteStream(join(dir, 'products.csv'));
  csv.write('sku,title,color\n');
  const colors = ['sage green', 'terracotta', 'ink blue', 'oat white'];
  for (let i = 0; i < ROWS; i++) {
    if (!csv.write(`SKU-${String(i).padStart(6, '0')},"Ceramic item ${i}, hand glazed",${colors[i % colors.length]}\n`)) await once(csv, 'drain');
  }
  csv.end();
  await once(csv, 'finish');
  writeFileSync(
    join(dir, 'big.yaml'),
    `version: 1
name: big
defaults: { type: image, model: studio-xl, aspectRatio: "4:5", resolution: 2K }
budget: { maxCredits: 500000 }
items:
  - rows: products.csv
    id: "{{sku}}"
    prompt: "{{title}} in {{color}}, studio product photo"
`,
  );
  const results = [];
  for (const [label, args] of [
    ['validate', ['validate', 'big.yaml']],
    ['estimate', ['estimate', 'big.yaml', '--simulate', '--json']],
  ]) {
    const r = await measureCli(args, { cwd: dir });
    if (r.code !== 0) throw new Error(`${label} exited ${r.code}: ${r.stderr}`);
    const pass = r.wallSeconds < GOAL.seconds && r.peakRssMb < GOAL.rssMb;
    results.push({ label, ...r, pass });
    console.log(`manifest ${label.padEnd(8)} ${ROWS.toLocaleString('en-US')} items: wall ${fmt(r.wallSeconds)} s, peak RSS ${fmt(r.peakRssMb, 0)} MB (goal < ${GOAL.seconds} s, < ${GOAL.rssMb} MB): ${pass ? 'met' : 'MISSED'}`);
  }
  const estimate = JSON.parse(results[1].stdout);
  console.log(`manifest estimate figures: ${estimate.items.total} items, ${estimate.credits.total} credits, ${estimate.dailyCap.keyDays} key days, ETA ${fmt(estimate.duration.seconds / 3600, 1)} h (${estimate.duration.limitedBy})`);
  return results.every((r) => r.pass);
}
