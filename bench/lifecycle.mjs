// The lifecycle property test (test/reliability/lifecycle.property.test.ts) at many more sequences than
// the suite's 1,000: random service answers, interrupts and resumes; no item paid twice, no paid job
// abandoned, every item final.
import { spawnSync } from 'node:child_process';

const RUNS = Number(process.env.GENBATCH_LIFECYCLE_RUNS ?? 20_000);
const SEED = Number(process.env.GENBATCH_LIFECYCLE_SEED ?? Date.now() % 1_000_000);

export async function lifecycleBench() {
  const started = Date.now();
  const res = spawnSync(
    process.execPath,
    ['node_modules/vitest/vitest.mjs', 'run', 'test/reliability/lifecycle.property.test.ts'],
    {
      env: { ...process.env, GENBATCH_LIFECYCLE_RUNS: String(RUNS), GENBATCH_LIFECYCLE_SEED: String(SEED) },
      encoding: 'utf8',
      timeout: 3_600_000,
    },
  );
  const pass = res.status === 0;
  const seconds = (Date.now() - started) / 1000;
  console.log(
    `lifecycle  ${RUNS.toLocaleString('en-US')} sequences (seed ${SEED}): ${pass ? 'all held' : 'FAILED'} in ${seconds.toFixed(1)} s`,
  );
  if (!pass)
    console.log(
      (res.stdout + res.stderr)
        .split('\n')
        .filter((l) => /Counterexample|Caused by|seed|Error/.test(l))
        .join('\n'),
    );
  return pass;
}
