import { resolveRunOptions, type ResolvedRunOptions } from '../../src/options/resolve.js';
import { RunClock } from '../../src/scheduler/clock.js';

/**
 * A run's options as the one resolver gives them for a run with no flags
 * (every default from where the flags declare it), at the test's time scale
 * (600x by default), with what a test sets over them.
 */
export function testOptions(
  set: Partial<Omit<ResolvedRunOptions, 'clock'>> & { timeScale?: number } = {},
): ResolvedRunOptions {
  const { timeScale = 600, ...rest } = set;
  const resolved = resolveRunOptions({ timeScale }, { manifestPath: 'm.yaml', cwd: process.cwd(), env: {} });
  return Object.freeze({ ...resolved, clock: new RunClock(Date.now, timeScale), ...rest });
}
