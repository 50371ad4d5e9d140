import { describe, expect, it } from 'vitest';
import { runCliInProcess } from '../helpers/cli.js';
import { expectNoDoubleChargeAndVerifiedOutputs, imageManifest, workspace } from '../helpers/run.js';
import { startTestSim } from '../helpers/sim.js';
import { openSqlite } from '../../src/store/driver.js';

const recordedScale = (statePath: string) => {
  const db = openSqlite(statePath, { readonly: true });
  try {
    return (db.prepare('SELECT time_scale AS s FROM runs ORDER BY rowid DESC LIMIT 1').get() as { s: number }).s;
  } finally {
    db.close();
  }
};

describe('a run against a time-scaled simulator paces to its time unasked', () => {
  it('run with no --time-scale takes the scale its /me says, and says so; --time-scale still wins', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(t.sim, imageManifest(12));
    const res = await runCliInProcess(['run', 'm.yaml'], ws.env, ws.dir);
    expect(res.code, res.stderr).toBe(0);
    expect(res.stderr).toContain('time x600: ');
    // At the real key's pace, 12 submissions at 10/min would take over a minute; at the simulator's they go at once.
    expect(recordedScale(ws.statePath)).toBe(600);
    expectNoDoubleChargeAndVerifiedOutputs(t.sim, ws);

    const other = workspace(t.sim, imageManifest(2));
    const given = await runCliInProcess(['run', 'm.yaml', '--time-scale', '300'], other.env, other.dir);
    expect(given.code, given.stderr).toBe(0);
    expect(recordedScale(other.statePath)).toBe(300);
  });

  it('estimate says the time at the scale it is given, or the one the simulator says', async () => {
    const t = await startTestSim({ timeScale: 60 });
    const ws = workspace(t.sim, imageManifest(200));
    const seconds = async (extra: string[]) => {
      const res = await runCliInProcess(['estimate', 'm.yaml', '--json', ...extra], ws.env, ws.dir);
      expect(res.code, res.stderr).toBe(0);
      return JSON.parse(res.stdout).duration.seconds as number;
    };
    const realPace = await seconds(['--time-scale', '1']);
    // 200 submissions at 10 a minute: some 20 minutes at the real key's pace.
    expect(realPace).toBeGreaterThan(19 * 60);
    expect(await seconds(['--time-scale', '60'])).toBe(Math.round(realPace / 60));
    expect(await seconds([])).toBe(Math.round(realPace / 60));
  });
});
