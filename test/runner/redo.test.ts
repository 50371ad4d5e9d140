import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { expectNoDoubleChargeAndVerifiedOutputs, readState, workspace } from '../helpers/run.js';
import { startTestSim } from '../helpers/sim.js';

describe('an item redone after its prompt changed', () => {
  it("keeps only the new job's outputs: later runs neither download the old job again nor overwrite the new file", async () => {
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(
      t.sim,
      'version: 1\nitems:\n  - { id: a, model: studio-lite, prompt: "first take" }\n  - { id: b, model: studio-edit, prompt: "edit of a", inputs: [{ from: a }] }\n',
    );
    expect((await ws.run()).code).toBe(0);
    writeFileSync(
      join(ws.dir, 'm.yaml'),
      'version: 1\nitems:\n  - { id: a, model: studio-lite, prompt: "second take, much longer than the first" }\n  - { id: b, model: studio-edit, prompt: "edit of a", inputs: [{ from: a }] }\n',
    );
    expect((await ws.run(['--redo-changed'])).code).toBe(0);
    const state = readState(ws.statePath);
    const newJob = state.attempts.filter((x) => x.item_id === 'a').at(-1)!.job_id;
    expect(state.outputs.filter((o) => o.item_id === 'a').map((o) => o.job_id)).toEqual([newJob]);
    const downloads = t.sim.service.ledger.of('download').length;

    // Two more resumes: nothing to download, and a's file keeps the new job's bytes.
    expect((await ws.run()).code).toBe(0);
    expect((await ws.run()).code).toBe(0);
    expect(t.sim.service.ledger.of('download')).toHaveLength(downloads);
    expectNoDoubleChargeAndVerifiedOutputs(t.sim, ws);
  });
});
