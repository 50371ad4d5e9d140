import { describe, expect, it } from 'vitest';
import { runCliInProcess } from '../helpers/cli.js';
import { expectNoDoubleChargeAndVerifiedOutputs, imageManifest, workspace, type RunWorkspace } from '../helpers/run.js';
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

/** A run against a simulator that says it is one keeps its state and outputs apart from a real run's. */
const apart = (ws: RunWorkspace): RunWorkspace => ({
  ...ws,
  statePath: ws.statePath.replace(/\.sqlite$/, '.simulated.sqlite'),
  outDir: `${ws.outDir}.simulated`,
});

describe('a run against a time-scaled simulator paces to its time unasked', () => {
  it('run with no --time-scale takes the scale its /me says, and says so; --time-scale still wins', async () => {
    const t = await startTestSim({ timeScale: 600, announce: true });
    const ws = apart(workspace(t.sim, imageManifest(12)));
    const res = await runCliInProcess(['run', 'm.yaml'], ws.env, ws.dir);
    expect(res.code, res.stderr).toBe(0);
    expect(res.stderr).toContain('time x600: ');
    // At the real key's pace, 12 submissions at 10/min would take over a minute; at the simulator's they go at once.
    expect(recordedScale(ws.statePath)).toBe(600);
    expectNoDoubleChargeAndVerifiedOutputs(t.sim, ws);

    const other = apart(workspace(t.sim, imageManifest(2)));
    const given = await runCliInProcess(['run', 'm.yaml', '--time-scale', '300'], other.env, other.dir);
    expect(given.code, given.stderr).toBe(0);
    expect(recordedScale(other.statePath)).toBe(300);
  });

  it('estimate says the time at the scale it is given, or the one the simulator says', async () => {
    const t = await startTestSim({ timeScale: 60, announce: true });
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

  it("estimate against a simulator at x600 says the figures and the clock are the simulator's; --time-scale 1 gives real time", async () => {
    const t = await startTestSim({ timeScale: 600, announce: true });
    const ws = workspace(t.sim, imageManifest(2000));
    const json = await runCliInProcess(['estimate', 'm.yaml', '--json'], ws.env, ws.dir);
    expect(json.code, json.stderr).toBe(0);
    const doc = JSON.parse(json.stdout);
    expect(doc).toMatchObject({ simulated: true, timeScale: 600 });
    const text = await runCliInProcess(['estimate', 'm.yaml'], ws.env, ws.dir);
    expect(text.stdout).toMatch(/^time: {6}about .+ \(time x600, the simulator's; --time-scale 1 gives real time\)$/m);
    expect(text.stdout).toMatch(/^simulated: /m);
    const real = JSON.parse(
      (await runCliInProcess(['estimate', 'm.yaml', '--json', '--time-scale', '1'], ws.env, ws.dir)).stdout,
    );
    expect(real).toMatchObject({ simulated: true, timeScale: 1 });
    expect(real.duration.seconds).toBeGreaterThan(500 * doc.duration.seconds);

    // A service that does not say it is a simulator: real time, and not labelled.
    const plain = await startTestSim({ timeScale: 600 });
    const other = workspace(plain.sim, imageManifest(20));
    const unlabelled = JSON.parse(
      (await runCliInProcess(['estimate', 'm.yaml', '--json'], other.env, other.dir)).stdout,
    );
    expect(unlabelled).toMatchObject({ simulated: false, timeScale: 1 });
  });
});
