import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { exitCodeWithin, runCliInProcess } from '../helpers/cli.js';
import { expectNoDoubleChargeAndVerifiedOutputs, imageManifest, readState, workspace } from '../helpers/run.js';
import { startTestSim } from '../helpers/sim.js';
import { makePng } from '../../src/simulator/media.js';

describe('a transfer that goes silent', () => {
  it('is abandoned after the idle timeout and tried again from a fresh link; no other download waits behind it; status names it', {
    timeout: 60_000,
  }, async () => {
    const t = await startTestSim({ timeScale: 60, imageSeconds: [1, 2] });
    // The first GET of each of the first four outputs: the headers and half the bytes, then nothing, on a live
    // connection. Four is every download slot the run has.
    const stalled = new Set<string>();
    t.sim.storage.inject = (path, seen) => {
      if (seen === 0 && stalled.size < 4) stalled.add(path);
      return seen === 0 && stalled.has(path) ? 'stall' : undefined;
    };
    // When the service first served each job's output: did any other output wait until a stalled one was given up?
    const firstServed = new Map<string, number>();
    t.sim.service.ledger.watch((e) => {
      if (e.kind === 'download' && !firstServed.has(e.jobId)) firstServed.set(e.jobId, Date.now());
    });
    const ws = workspace(t.sim, imageManifest(12), {}, 60);
    const cli = ws.start(['--idle-timeout', '4']);
    // While they hang, status says which downloads stall, and since when.
    await vi.waitFor(
      async () => {
        const status = JSON.parse((await runCliInProcess(['status', 'm.yaml', '--json'], ws.env, ws.dir)).stdout);
        const downloading = status.waiting.find((w: { state: string }) => w.state === 'downloading');
        expect(downloading?.for).toMatch(/4 stalled: no byte since .*; each is abandoned and tried again after 4 s/);
      },
      { timeout: 10_000, interval: 100 },
    );
    expect(await exitCodeWithin(cli, 20_000)).toBe(0);
    const outputs = readState(ws.statePath).outputs as unknown as { item_id: string; downloaded_at: number }[];
    const downloads = t.sim.service.ledger.of('download');
    const retried = new Set(
      downloads.filter((d, i) => downloads.findIndex((e) => e.jobId === d.jobId) !== i).map((d) => d.jobId),
    );
    expect(retried.size).toBe(4);
    // The other eight were served while the four hung: no stalled download is given up before the idle timeout
    // has passed since its body began, so anything served before then waited behind none of them.
    const firstAbandonment = Math.min(...[...retried].map((jobId) => firstServed.get(jobId)!)) + 4_000;
    const others = [...firstServed].filter(([jobId]) => !retried.has(jobId));
    expect(others).toHaveLength(8);
    for (const [, servedAt] of others) expect(servedAt).toBeLessThan(firstAbandonment);
    expect(outputs.filter((o) => o.downloaded_at !== null)).toHaveLength(12);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(12);
    expectNoDoubleChargeAndVerifiedOutputs(t.sim, ws);
    expect(readFileSync(join(ws.dir, '.genbatch', 'm.log'), 'utf8')).toMatch(/"kind":"transfer-stalled"/);
  });
});

describe('an upload that storage stops taking', () => {
  it('is abandoned after the idle timeout and uploaded again; the item is charged once', {
    timeout: 30_000,
  }, async () => {
    const t = await startTestSim({ timeScale: 60 });
    // The first PUT of the input: storage reads nothing and answers nothing.
    const puts: number[] = [];
    t.sim.storage.inject = (path, seen) => {
      if (!path.startsWith('/uploads/')) return undefined;
      puts.push(seen);
      return seen === 0 ? 'stall' : undefined;
    };
    const manifest =
      'version: 1\nitems:\n  - { id: recolor, model: studio-edit, prompt: "matte black", inputs: [mug.png] }\n';
    const ws = workspace(t.sim, manifest, { 'mug.png': makePng('mug', 1024) }, 60);
    const startedAt = Date.now();
    const result = await ws.run(['--idle-timeout', '1']);
    expect(result.code, result.stderr).toBe(0);
    expect(Date.now() - startedAt).toBeLessThan(15_000);
    expect(puts).toEqual([0, 1]);
    expect(t.sim.service.ledger.of('upload-put').filter((p) => p.status === 200)).toHaveLength(1);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(1);
    expectNoDoubleChargeAndVerifiedOutputs(t.sim, ws);
  });
});
