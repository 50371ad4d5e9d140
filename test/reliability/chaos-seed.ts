import { expect } from 'vitest';
import { type ChaosResult, chaosRun } from '../../bench/chaos.mjs';

/**
 * One seed of the chaos bench run to its end, then checked (the bench checks the ledger, the output dir and the
 * bucket). The seeds are spread over three files because a file's tests run one after another: six seeds in one
 * file held one worker of four for 63 s, and were the suite's last 47 s.
 */
export async function expectSeedHolds(seed: number): Promise<ChaosResult> {
  const lines: string[] = [];
  const result = await chaosRun(seed, { say: (line) => lines.push(line) });
  expect(result.violations, `replay: CHAOS_SEED=${seed} npm run bench chaos\n${lines.join('\n')}`).toEqual([]);
  expect(Object.values(result.faults).reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(2);
  return result;
}
