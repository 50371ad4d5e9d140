import type { Manifest } from './schema.js';

/** The run's budget, net of refunds: `--max-credits` when given, else the manifest's `budget.maxCredits`, else none. */
export function runBudget(flag: number | undefined, manifest: Pick<Manifest, 'budget'>): number | undefined {
  return flag ?? manifest.budget?.maxCredits;
}
