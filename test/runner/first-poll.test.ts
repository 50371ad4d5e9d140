import { describe, expect, it } from 'vitest';
import { FirstPoll } from '../../src/runner/item/first-poll.js';
import { imageManifest, workspace } from '../helpers/run.js';
import { startTestSim } from '../helpers/sim.js';

type Sim = Awaited<ReturnType<typeof startTestSim>>;
const jobReads = (t: Sim) =>
  t.sim.service.ledger.of('request').filter((r) => r.method === 'GET' && r.path.startsWith('/jobs/'));

describe('the first poll of a new job', () => {
  it("leaves at once until a job of its model has ended, then after half the shortest run seen, never later than one poll's wait", () => {
    const first = new FirstPoll(() => 30_000);
    expect(first.firstAt('studio-lite', 5_000)).toBe(5_000);
    first.ended('studio-lite', 1_000, 41_000);
    expect(first.firstAt('studio-lite', 5_000)).toBe(25_000);
    first.ended('studio-lite', 2_000, 14_000);
    expect(first.firstAt('studio-lite', 5_000)).toBe(11_000);
    // A longer one does not lengthen it; another model knows nothing yet.
    first.ended('studio-lite', 0, 90_000);
    expect(first.firstAt('studio-lite', 5_000)).toBe(11_000);
    expect(first.firstAt('studio-pro', 5_000)).toBe(5_000);
    first.ended('video-std', 0, 600_000);
    expect(first.firstAt('video-std', 0)).toBe(30_000);
  });

  it('jobs longer than one long poll cost one read each once the first has ended, not two (45 s jobs, 30 s polls, one at a time)', async () => {
    const t = await startTestSim({ timeScale: 60, imageSeconds: [45, 45] });
    const ws = workspace(t.sim, imageManifest(4), {}, 60);
    const res = await ws.run(['--max-images-in-flight', '1']);
    expect(res.code, res.stdout).toBe(0);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(4);
    // The first job: a poll that ends at 30 s, then one that sees it end. Each later one: a poll from 22.5 s that sees it end.
    expect(jobReads(t)).toHaveLength(2 + 1 + 1 + 1);
    for (const read of jobReads(t).slice(2)) expect(read.status).toBe(200);
  });

  it('at the real pace: 1.5 s jobs with 1 s polls, one at a time, are read twice for the first and once for each after it', {
    timeout: 30_000,
  }, async () => {
    const t = await startTestSim({ timeScale: 1, imageSeconds: [1.5, 1.5] });
    const ws = workspace(t.sim, imageManifest(3), {}, 1);
    const res = await ws.run(['--max-images-in-flight', '1', '--poll-wait', '1']);
    expect(res.code, res.stdout).toBe(0);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(3);
    expect(jobReads(t)).toHaveLength(2 + 1 + 1);
  });
});
