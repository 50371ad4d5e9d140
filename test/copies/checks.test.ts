import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FolderSink } from '../../src/sink/index.js';
import { runCliInProcess } from '../helpers/cli.js';
import { raw, startTestReview } from '../helpers/review.js';
import { readState, workspace } from '../helpers/run.js';
import { startTestSim } from '../helpers/sim.js';

const manifest = `version: 1
defaults: { model: studio-lite }
checks: { blank: true, size: "192x192" }
items:
  - { id: mug, prompt: "a mug" }
  - { id: grey, prompt: "a grey mug [sim:flat]" }
  - { id: wide, prompt: "a wide mug", checks: { size: "400x300" } }
`;

describe("the manifest's checks of each image output", () => {
  it('reject a flat image and a wrong size with the reason, as a reviewer would; the outputs stay; --redo-rejected makes them again', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(t.sim, manifest);
    const run = await ws.run();
    expect(run.code, run.stderr).toBe(0);
    const status = JSON.parse((await runCliInProcess(['status', 'm.yaml', '--json'], ws.env, ws.dir)).stdout);
    expect(status.review).toEqual({ approved: 0, rejected: 2, unreviewed: 1, rejectedByChecks: 2 });
    const text = (await runCliInProcess(['status', 'm.yaml'], ws.env, ws.dir)).stdout;
    expect(text).toContain("2 rejected (2 by the manifest's checks)");

    const rows = readFileSync(join(ws.outDir, 'results.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    const byId = new Map(rows.map((r) => [r.id, r]));
    expect(byId.get('mug').review).toBeNull();
    expect(byId.get('grey').review).toMatchObject({
      decision: 'rejected',
      byCheck: true,
      note: expect.stringMatching(/^rejected by the manifest's checks: blank: a flat image/),
    });
    // The item's own checks replace the top level's: its size is checked against 400x300, and it is not blank.
    expect(byId.get('wide').review.note).toBe(
      "rejected by the manifest's checks: size: 192x192, expected 400x300 (within 2%)",
    );
    // The review app lists them among the rejected, with the reason as their note.
    const review = await startTestReview({
      statePath: ws.statePath,
      outputs: new FolderSink(ws.outDir),
      title: 'm',
      budget: null,
    });
    const rejected = JSON.parse(
      (await raw(review.base, 'GET', `/api/items?token=${review.token}&review=rejected`)).body,
    ).cards.map((c: { id: string; note: string }) => [c.id, c.note]);
    expect(rejected).toEqual([
      ['grey', byId.get('grey').review.note],
      ['wide', byId.get('wide').review.note],
    ]);
    // A check never deletes a paid output.
    for (const o of readState(ws.statePath).outputs) expect(existsSync(join(ws.outDir, o.path))).toBe(true);

    const estimate = JSON.parse(
      (await runCliInProcess(['estimate', 'm.yaml', '--redo-rejected', '--json'], ws.env, ws.dir)).stdout,
    );
    expect(estimate.redoRejected.items).toBe(2);
    const redo = await ws.run(['--redo-rejected']);
    expect(redo.code, redo.stderr).toBe(0);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(5);
    expect(existsSync(join(ws.outDir, 'grey-1.v2.png'))).toBe(true);
  });

  it('are refused on a video item, and a size that is not WxH, where they are written', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(
      t.sim,
      `version: 1
checks: { size: "big" }
items:
  - { id: spin, type: video, model: motion-2, prompt: "a spin", duration: 5, checks: { blank: true } }
`,
    );
    const result = await runCliInProcess(['validate', 'm.yaml'], ws.env, ws.dir);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/m\.yaml:2:\d+: checks\.size: expected WxH, such as "1600x2000"/);
    expect(result.stderr).toMatch(/m\.yaml:4:\d+: items\[0\]\.checks: checks apply only to image outputs/);
  });
});
