import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CLI } from '../helpers/cli.js';
import {
  expectNoDoubleChargeAndVerifiedOutputs,
  imageManifest,
  killLoop,
  readState,
  workspace,
} from '../helpers/run.js';
import { startTestSim } from '../helpers/sim.js';

const KILLS = 8;

describe('killed at any instant, resumed with the same command', () => {
  it(`survives ${KILLS} SIGKILLs: no item charged twice, every output on disk with the right bytes`, {
    timeout: 120_000,
  }, async () => {
    const t = await startTestSim({ timeScale: 60, dropRate: 0.1, latencyMs: [0, 20], seed: 11 });
    const ws = workspace(t.sim, imageManifest(16), {}, 60);
    const { kills, final } = await killLoop(t.sim, ws, KILLS);
    expect(kills).toBe(KILLS);
    expect(final.code, final.stdout + final.stderr).toBe(0);
    expect(readState(ws.statePath).items.every((item) => item.state === 'done')).toBe(true);
    // One charge per item: no attempt was ever needed twice (no failures configured).
    const prompts = t.sim.service.ledger.of('charge').map((c) => c.prompt);
    expect(prompts.length).toBe(16);
    expect(new Set(prompts).size).toBe(16);
    expectNoDoubleChargeAndVerifiedOutputs(t.sim, ws);
    expect(readdirSync(ws.outDir).filter((f) => f.endsWith('.part'))).toEqual([]);
    // Each restart rebuilds the submission window from the state, the sends a killed run never saw answered too.
    expect(t.sim.service.ledger.countStatus(429)).toBe(0);
  });

  it('at the real pace: killed as its window fills, the restart waits for the window and sees no 429', {
    timeout: 60_000,
  }, async () => {
    // A key of 3 submissions per 2 real seconds, the runner told the same: each restart comes back within the window.
    const t = await startTestSim({
      timeScale: 1,
      imageSeconds: [1, 1],
      limits: { submissionsPerWindow: 3, windowSeconds: 2 },
    });
    const ws = workspace(t.sim, imageManifest(8), {}, 1);
    const args = ['--submit-rate', '3/2s'];
    for (let life = 0; life < 2; life++) {
      const child = spawn(process.execPath, [CLI, ...ws.args(args)], { cwd: ws.dir, env: ws.env, stdio: 'ignore' });
      const exited = once(child, 'exit');
      const target = (life + 1) * 3;
      const unwatch = t.sim.service.ledger.watch((e) => {
        if (e.kind === 'charge' && t.sim.service.ledger.of('charge').length === target) child.kill('SIGKILL');
      });
      await exited;
      unwatch();
    }
    const final = await ws.run(args);
    expect(final.code, final.stderr).toBe(0);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(8);
    expect(t.sim.service.ledger.countStatus(429)).toBe(0);
    expectNoDoubleChargeAndVerifiedOutputs(t.sim, ws);
  });

  it('SIGINT stops submitting, saves state and exits 130; the same command finishes without double charges', {
    timeout: 60_000,
  }, async () => {
    const t = await startTestSim({ timeScale: 60 });
    const ws = workspace(t.sim, imageManifest(20), {}, 60);
    const child = spawn(process.execPath, [CLI, ...ws.args(['--submit-rate', '2/1s'])], {
      cwd: ws.dir,
      env: ws.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = once(child, 'exit');
    // Interrupted the instant the service charges the 3rd job: mid-run, whatever the machine's speed.
    const unwatch = t.sim.service.ledger.watch((event) => {
      if (event.kind === 'charge' && t.sim.service.ledger.of('charge').length === 3) child.kill('SIGINT');
    });
    const [code] = await exited;
    unwatch();
    expect(code).toBe(130);
    const charged = t.sim.service.ledger.of('charge').length;
    expect(charged).toBeGreaterThanOrEqual(3);
    expect(charged).toBeLessThan(20);
    const rest = await ws.run();
    expect(rest.code).toBe(0);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(20);
    expectNoDoubleChargeAndVerifiedOutputs(t.sim, ws);
  });
});
