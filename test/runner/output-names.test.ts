import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCliInProcess } from '../helpers/cli.js';
import { expectNoDoubleChargeAndVerifiedOutputs, readState, workspace } from '../helpers/run.js';
import { startTestSim } from '../helpers/sim.js';

describe("output names: no output ever overwrites another item's", () => {
  it("validate catches a later output of one item named like another item's first (no {{n}} in output.name)", async () => {
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(
      t.sim,
      'version: 1\noutput: { name: "{{id}}.{{ext}}" }\nitems:\n  - { id: a, model: studio-lite, prompt: p }\n  - { id: a-2, model: studio-lite, prompt: q }\n',
    );
    const res = await runCliInProcess(['validate', 'm.yaml'], ws.env, ws.dir);
    expect(res.code).toBe(2);
    expect(res.stdout + res.stderr).toContain(
      'items "a" (its output 2) and "a-2" would write the same file a-2.png; put {{n}} in output.name',
    );
  });

  it('a clash validation cannot foresee (a job with 5 outputs) is refused at download: the first file keeps its bytes, the other item says why', async () => {
    const t = await startTestSim({ timeScale: 600, imageOutputs: 5 });
    const ws = workspace(
      t.sim,
      'version: 1\noutput: { name: "{{id}}.{{ext}}" }\nitems:\n  - { id: a, model: studio-lite, prompt: p }\n  - { id: a-5, model: studio-lite, prompt: q }\n',
    );
    const res = await ws.run();
    expect(res.code).toBe(1);
    const state = readState(ws.statePath);
    const stuck = state.items.filter((i) => i.state !== 'done');
    expect(stuck).toHaveLength(1);
    expect(stuck[0]).toMatchObject({ state: 'downloading', error_code: 'DOWNLOAD_FAILED' });
    expect(res.stdout + res.stderr).toMatch(
      /would be saved as a-5\.png, which holds the output of (a|a-5); it is not overwritten/,
    );
    const owners = state.outputs.filter((o) => o.path === 'a-5.png' && o.sha256);
    expect(owners).toHaveLength(1);
    expect(readFileSync(join(ws.outDir, 'a-5.png')).length).toBe(owners[0]!.bytes);
    expectNoDoubleChargeAndVerifiedOutputs(t.sim, ws);
  });

  it('an id that reads like a disk error code is not taken for one: a refused name does not stop the run as a full disk', async () => {
    const t = await startTestSim({ timeScale: 600, imageOutputs: 5 });
    const ws = workspace(
      t.sim,
      'version: 1\noutput: { name: "{{id}}.{{ext}}" }\nitems:\n  - { id: EROFS, model: studio-lite, prompt: p }\n  - { id: EROFS-5, model: studio-lite, prompt: q }\n',
    );
    const res = await ws.run();
    expect(res.code).toBe(1);
    expect(res.stdout + res.stderr).toMatch(/which holds the output of/);
    expect(res.stdout + res.stderr).not.toMatch(/cannot write outputs/);
    expect(res.stdout + res.stderr).not.toMatch(/stopping/i);
  });
});
