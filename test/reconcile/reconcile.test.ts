import { rmSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { runCliInProcess } from '../helpers/cli.js';
import { readState, workspace } from '../helpers/run.js';
import { startTestSim } from '../helpers/sim.js';

const manifest = (prompts: string[]) =>
  `version: 1\ndefaults: { model: studio-lite }\nitems:\n${prompts.map((p, i) => `  - { id: i${i}, prompt: "${p}" }\n`).join('')}`;

describe('reconcile: the state against the service’s job list', () => {
  it('a clean run reconciles to no difference over a list of several pages; web jobs are counted apart; nothing is sent', async () => {
    // Pages of 2 at most: 5 of ours and 3 web jobs take 4 pages.
    const t = await startTestSim({ timeScale: 600, webJobs: 3, limits: { maxListLimit: 2, defaultListLimit: 2 } });
    const ws = workspace(t.sim, manifest(['a mug', 'a bowl', 'a vase', 'a cup', 'a jug']));
    expect((await ws.run()).code).toBe(0);
    const posts = t.sim.service.ledger.of('request').filter((r) => r.method === 'POST').length;
    const r = await runCliInProcess(['reconcile', 'm.yaml', '--json'], ws.env, ws.dir);
    expect(r.code).toBe(0);
    const report = JSON.parse(r.stdout);
    expect(report.keys).toEqual([expect.objectContaining({ jobs: 8, pages: 4, complete: true })]);
    expect(report).toMatchObject({ unknown: [], lost: [], differences: 0 });
    expect(report.credits).toMatchObject({
      service: { charged: 10, net: 10 },
      state: { charged: 10, net: 10 },
      difference: 0,
    });
    expect(report.otherOrigins).toEqual([expect.objectContaining({ jobs: 3 })]);
    expect(t.sim.service.ledger.of('request').filter((r) => r.method === 'POST')).toHaveLength(posts);
    const text = await runCliInProcess(['reconcile', 'm.yaml'], ws.env, ws.dir);
    expect(text.stdout).toMatch(/no differences/);
    expect(text.stdout).toMatch(/3 jobs from origin "\w+" \(not the API\) counted apart/);
  });

  it('after dropped responses and a deleted state, names every paid job the new state does not know, with its credits and the item it most likely belongs to', async () => {
    const t = await startTestSim({ timeScale: 600, webJobs: 1 });
    const prompts = ['a mug [sim:drop]', 'a bowl', 'a vase [sim:drop]', 'a cup'];
    const ws = workspace(t.sim, manifest(prompts));
    expect((await ws.run()).code).toBe(0);
    expect(t.sim.service.ledger.of('dropped-response').length).toBeGreaterThan(0);
    const paid = t.sim.service.ledger.of('charge');
    expect(paid).toHaveLength(4);

    // The state is lost; a new one is begun with a budget for one item, so three paid jobs are the old state's alone.
    rmSync(ws.statePath);
    rmSync(`${ws.statePath}-wal`, { force: true });
    rmSync(`${ws.statePath}-shm`, { force: true });
    expect((await ws.run(['--max-credits', '2'])).code).toBe(3);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(4); // the one resubmitted found its job by its key

    const r = await runCliInProcess(['reconcile', 'm.yaml', '--json'], ws.env, ws.dir);
    expect(r.code).toBe(1);
    const report = JSON.parse(r.stdout);
    const known = readState(ws.statePath).attempts.flatMap((a) => (a.job_id ? [a.job_id] : []));
    const expected = paid.filter((c) => !known.includes(c.jobId));
    expect(expected).toHaveLength(3);
    expect(report.unknown.map((u: { id: string }) => u.id).sort()).toEqual(expected.map((c) => c.jobId).sort());
    for (const u of report.unknown) {
      const charge = paid.find((c) => c.jobId === u.id)!;
      expect(u.charged).toBe(charge.credits);
      expect(u.likelyItem).toBe(`i${prompts.indexOf(charge.prompt)}`);
    }
    expect(report.credits).toMatchObject({ service: { net: 8 }, state: { net: 2 }, difference: 6 });
    expect(report.lost).toEqual([]);
    expect(report.otherOrigins).toEqual([expect.objectContaining({ jobs: 1 })]);
  });
});
