import { describe, expect, it } from 'vitest';
import { expectNoDoubleChargeAndVerifiedOutputs, workspace } from '../helpers/run.js';
import { startTestSim } from '../helpers/sim.js';
import { runCliInProcess } from '../helpers/cli.js';

describe('priorities', () => {
  it('ready items go higher priority first (from a rows column too), then in manifest order; dependencies still hold', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const manifest = `version: 1
defaults: { model: studio-lite }
items:
  - rows: rows.csv
    id: "sku-{{sku}}"
    prompt: "product {{sku}}"
    priority: "{{rush}}"
  - id: recolor
    model: studio-edit
    prompt: "the same, in blue"
    priority: 100
    inputs: [{ from: sku-3 }]
`;
    const ws = workspace(t.sim, manifest, { 'rows.csv': 'sku,rush\n1,0\n2,5\n3,0\n4,10\n5,5\n' });
    // One in flight: the order of the charges is the order the run chose.
    const res = await ws.run(['--max-images-in-flight', '1']);
    expect(res.code, res.stderr).toBe(0);
    const order = t.sim.service.ledger.of('charge').map((c) => c.prompt);
    // The highest priority of all waits for the item it edits, however low that one's priority.
    expect(order).toEqual(['product 4', 'product 2', 'product 5', 'product 1', 'product 3', 'the same, in blue']);
    expectNoDoubleChargeAndVerifiedOutputs(t.sim, ws);
  });

  it('a priority that is not a number is refused with the file, line and field', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(
      t.sim,
      'version: 1\ndefaults: { model: studio-lite }\nitems:\n  - { id: a, prompt: "a mug", priority: "soon" }\n',
    );
    const res = await ws.run();
    expect(res.code).toBe(2);
    expect(res.stderr).toMatch(/m\.yaml:4:\d+.*priority.*expected a number \(higher goes first\), found "soon"/);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(0);
  });
});

describe('run --only', () => {
  const manifest = `version: 1
defaults: { model: studio-lite }
items:
  - rows: rows.csv
    id: "sku-{{sku}}"
    prompt: "product {{sku}}"
  - id: recolor
    model: studio-edit
    prompt: "the same, in blue"
    inputs: [{ from: sku-3 }]
`;
  const rows = { 'rows.csv': 'sku\n1\n2\n3\n4\n5\n' };

  it('runs just the chosen items (ids and globs) and what they wait for; a later plain run does the rest, paying nothing twice', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(t.sim, manifest, rows);
    const first = await ws.run(['--only', 'recolor', '--only', 'sku-1*']);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toContain('3 items not selected by --only are still to be sent, 6 credits: held back');
    expect(
      t.sim.service.ledger
        .of('charge')
        .map((c) => c.prompt)
        .sort(),
    ).toEqual(['product 1', 'product 3', 'the same, in blue']);
    const rest = await ws.run();
    expect(rest.code, rest.stderr).toBe(0);
    expect(
      t.sim.service.ledger
        .of('charge')
        .map((c) => c.prompt)
        .sort(),
    ).toEqual(['product 1', 'product 2', 'product 3', 'product 4', 'product 5', 'the same, in blue']);
    expectNoDoubleChargeAndVerifiedOutputs(t.sim, ws);
  });

  it('the note after each of three runs counts the items really held back, as status does, and prices them; it never says to run them', async () => {
    const t = await startTestSim({ timeScale: 600 });
    // Three stills, each made into a video: the videos are the costly part a user holds back.
    const stills = `version: 1\ndefaults: { model: studio-xl }\nitems:\n${[1, 2, 3]
      .map(
        (n) =>
          `  - { id: still-${n}, prompt: "product ${n}" }\n  - { id: spin-${n}, type: video, model: motion-2, duration: 5, resolution: 720p, prompt: "spin ${n}", image: { from: still-${n} } }\n`,
      )
      .join('')}`;
    const ws = workspace(t.sim, stills);
    for (const only of [['still-1'], ['still-2', 'still-3'], ['spin-1']]) {
      const res = await ws.run(only.flatMap((id) => ['--only', id]));
      expect(res.code, res.stderr).toBe(0);
      const status = JSON.parse((await runCliInProcess(['status', 'm.yaml', '--json'], ws.env, ws.dir)).stdout);
      const estimate = JSON.parse((await runCliInProcess(['estimate', 'm.yaml', '--json'], ws.env, ws.dir)).stdout);
      const held = status.items.pending + status.items.queued;
      expect(held).toBeGreaterThan(0);
      expect(estimate.remaining.items.total).toBe(held);
      const note = res.stdout.match(
        /(\d+) items? not selected by --only (?:is|are) still to be sent, (\d+) credits?: held back/,
      );
      expect(note, res.stdout).not.toBeNull();
      expect(Number(note![1])).toBe(held);
      expect(Number(note![2])).toBe(estimate.remaining.credits.total);
      expect(res.stdout).not.toMatch(/without --only runs/);
    }
    // Held back over three runs: two videos, never sent.
    expect(
      t.sim.service.ledger
        .of('charge')
        .map((c) => c.prompt)
        .sort(),
    ).toEqual(['product 1', 'product 2', 'product 3', 'spin 1']);
  });

  it('a selector that matches nothing is a usage error, and nothing is sent', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(t.sim, manifest, rows);
    const res = await ws.run(['--only', 'nope-*']);
    expect(res.code).toBe(2);
    expect(res.stdout + res.stderr).toMatch(/--only nope-\* matches no item/);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(0);
  });
});
