// npm run bench [part ...]: runs the named parts (all by default) and prints their figures.
import { lifecycleBench } from './lifecycle.mjs';
import { manifestBench } from './manifest.mjs';
import { reportBench } from './report.mjs';
import { runnerBench } from './runner.mjs';
import { scaleBench } from './scale.mjs';
import { keysBench } from './keys.mjs';
import { pauseBench } from './pause.mjs';
import { chaosBench } from './chaos.mjs';
import { decisionsBench } from './decisions.mjs';
import { daysBench } from './days.mjs';
import { reviewBench } from './review.mjs';
import { publishBench } from './publish.mjs';
import { derivativesBench } from './derivatives.mjs';
import { metricsBench } from './metrics.mjs';
import { snapshotBench } from './snapshot.mjs';

const parts = {
  manifest: manifestBench,
  runner: runnerBench,
  pause: pauseBench,
  scale: scaleBench,
  report: reportBench,
  lifecycle: lifecycleBench,
  keys: keysBench,
  chaos: chaosBench,
  decisions: decisionsBench,
  days: daysBench,
  review: reviewBench,
  publish: publishBench,
  derivatives: derivativesBench,
  metrics: metricsBench,
  snapshot: snapshotBench,
};
const wanted = process.argv.slice(2).length ? process.argv.slice(2) : Object.keys(parts);
let ok = true;
for (const name of wanted) {
  const part = parts[name];
  if (!part) {
    console.error(`unknown benchmark part ${name}; parts: ${Object.keys(parts).join(', ')}`);
    process.exit(2);
  }
  ok = (await part()) && ok;
}
process.exitCode = ok ? 0 : 1;
