import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCliInProcess } from '../helpers/cli.js';
import { imageManifest, outputFilesIn, readState, workspace } from '../helpers/run.js';
import { startTestSim } from '../helpers/sim.js';

/** A trial against a simulator that says what it is, in the workspace's folder; the same workspace then meets `other`. */
async function trial(items = 3) {
  const sim = await startTestSim({ timeScale: 600, announce: true });
  const ws = workspace(sim.sim, imageManifest(items));
  const res = await runCliInProcess(['run', 'm.yaml'], ws.env, ws.dir);
  expect(res.code, res.stderr).toBe(0);
  return { sim, ws, res, simState: join(ws.dir, '.genbatch', 'm.simulated.sqlite'), simOut: `${ws.outDir}.simulated` };
}

describe("a simulator's state never passes for a real run", () => {
  it('a run against a simulator keeps its state and outputs apart, says so, and status says what the state was made against', async () => {
    const { ws, res, simState, simOut, sim } = await trial();
    expect(res.stderr).toMatch(/the service says it is a simulator: this run's state and outputs are kept apart/);
    expect(existsSync(simState)).toBe(true);
    expect(existsSync(ws.statePath)).toBe(false);
    expect(outputFilesIn(simOut)).toHaveLength(3);
    expect(existsSync(ws.outDir)).toBe(false);

    // The state commands take the trial's state in the environment the trial ran in, with no flag, and say which.
    const status = await runCliInProcess(['status', 'm.yaml', '--json'], ws.env, ws.dir);
    expect(JSON.parse(status.stdout)).toMatchObject({
      state: simState,
      madeAgainst: { simulator: true, service: sim.sim.baseUrl, inferred: false },
    });
    const text = await runCliInProcess(['status', 'm.yaml'], ws.env, ws.dir);
    expect(text.stdout).toContain(`made against: a simulator (${sim.sim.baseUrl})`);
    // --simulate means the in-process rehearsal, which has its own state: none here, and it says where the trial is.
    const rehearsal = await runCliInProcess(['status', 'm.yaml', '--simulate'], ws.env, ws.dir);
    expect(rehearsal.stdout).toMatch(
      /nothing has run here yet .*a trial's state .*m\.simulated\.sqlite: leave out --simulate/,
    );
  });

  it('the same manifest against a service that is not a simulator makes and charges everything, and leaves the trial alone', async () => {
    const { ws, simState, simOut } = await trial();
    const trialOutputs = readdirSync(simOut).sort();
    const trialItems = readState(simState).items;
    const service = await startTestSim({ timeScale: 600 });
    const env = { ...ws.env, GENBATCH_BASE_URL: service.sim.baseUrl, GENBATCH_API_KEY: service.sim.apiKey };
    const res = await runCliInProcess(['run', 'm.yaml', '--time-scale', '600'], env, ws.dir);
    expect(res.code, res.stderr).toBe(0);
    expect(service.sim.service.ledger.of('charge')).toHaveLength(3);
    expect(outputFilesIn(ws.outDir)).toHaveLength(3);
    expect(readState(ws.statePath).items.every((i) => i.state === 'done')).toBe(true);
    expect(readdirSync(simOut).sort()).toEqual(trialOutputs);
    expect(readState(simState).items).toEqual(trialItems);
  });

  it("a simulator's state given by --state to a run against the service is refused before anything is sent, naming both", async () => {
    const { ws, simState, sim } = await trial();
    const service = await startTestSim({ timeScale: 600 });
    const env = { ...ws.env, GENBATCH_BASE_URL: service.sim.baseUrl, GENBATCH_API_KEY: service.sim.apiKey };
    const res = await runCliInProcess(['run', 'm.yaml', '--state', simState, '--time-scale', '600'], env, ws.dir);
    expect(res.code).toBe(2);
    const said = res.stdout + res.stderr;
    expect(said).toContain(`.genbatch/m.simulated.sqlite was made against a simulator (${sim.sim.baseUrl})`);
    expect(said).toContain(`this run's service, the service at ${service.sim.baseUrl}, does not say it is one`);
    expect(said).toMatch(/leave out --state \(genbatch run m\.yaml\)/);
    expect(service.sim.service.ledger.of('charge')).toHaveLength(0);
    expect(service.sim.service.ledger.of('request').filter((r) => r.method === 'POST')).toHaveLength(0);
  });

  it("a real run's state given by --state to a run against a simulator is refused too", async () => {
    const service = await startTestSim({ timeScale: 600 });
    const ws = workspace(service.sim, imageManifest(2));
    expect((await ws.run()).code).toBe(0);
    const sim = await startTestSim({ timeScale: 600, announce: true });
    const env = { ...ws.env, GENBATCH_BASE_URL: sim.sim.baseUrl, GENBATCH_API_KEY: sim.sim.apiKey };
    const res = await runCliInProcess(['run', 'm.yaml', '--state', ws.statePath], env, ws.dir);
    expect(res.code).toBe(2);
    expect(res.stdout + res.stderr).toContain(`was made against the service at ${service.sim.baseUrl}`);
    expect(res.stdout + res.stderr).toContain('says it is a simulator');
    expect(sim.sim.service.ledger.of('charge')).toHaveLength(0);
  });

  it("a state an older genbatch made against a time-scaled simulator is known by its runs' pace", async () => {
    const service = await startTestSim({ timeScale: 600 });
    const ws = workspace(service.sim, imageManifest(2));
    expect((await ws.run()).code).toBe(0);
    // As an older genbatch left it: no record of the service, its runs paced at x600.
    const { openSqlite } = await import('../../src/store/driver.js');
    const db = openSqlite(ws.statePath);
    db.prepare("DELETE FROM meta WHERE key = 'made_against'").run();
    db.close();
    const res = await ws.run(['--time-scale', '1']);
    expect(res.code).toBe(2);
    expect(res.stdout + res.stderr).toContain('was made against a simulator (paced at x600) (as its runs show)');
  });
});
