import { readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { expectNoDoubleChargeAndVerifiedOutputs, imageManifest, readState, workspace } from '../helpers/run.js';
import { startTestSim } from '../helpers/sim.js';

const downloads = (t: Awaited<ReturnType<typeof startTestSim>>) =>
  t.sim.service.ledger
    .of('download')
    .filter((d) => d.status === 200)
    .map((d) => d.jobId);

describe('what was verified stays verified', () => {
  it('a resume downloads again an output altered in place (same size) or deleted, keeps one only touched, and pays nothing', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(t.sim, imageManifest(3));
    expect((await ws.run()).code).toBe(0);
    const jobOf = Object.fromEntries(readState(ws.statePath).outputs.map((o) => [o.item_id, o.job_id]));
    const file = (id: string) => join(ws.outDir, `${id}-1.png`);
    // item-0: the same size, other bytes, and its old modification time put back: only the hash can tell.
    const before0 = statSync(file('item-0'));
    const altered = Buffer.from(readFileSync(file('item-0')));
    altered[altered.length - 1] = altered.at(-1)! ^ 0xff;
    writeFileSync(file('item-0'), altered);
    utimesSync(file('item-0'), before0.atime, new Date(before0.mtimeMs + 5_000));
    // item-1: touched, the same bytes.
    utimesSync(file('item-1'), new Date(), new Date(Date.now() + 60_000));
    // item-2: gone.
    rmSync(file('item-2'));
    const charges = t.sim.service.ledger.of('charge').length;
    const fetched = downloads(t).length;

    const again = await ws.run();
    expect(again.code, again.stdout).toBe(0);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(charges);
    expect(downloads(t).slice(fetched).sort()).toEqual([jobOf['item-0'], jobOf['item-2']].sort());
    expectNoDoubleChargeAndVerifiedOutputs(t.sim, ws);
    const row1 = readState(ws.statePath).outputs.find((o) => o.item_id === 'item-1') as unknown as { mtime_ms: number };
    expect(row1.mtime_ms).toBe(Math.trunc(statSync(file('item-1')).mtimeMs));

    // A third run reads no file nothing touched: no download, the same files.
    const third = await ws.run();
    expect(third.code).toBe(0);
    expect(downloads(t)).toHaveLength(fetched + 2);
  });

  it('an altered output whose job can no longer be read is reported, not kept as verified', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(t.sim, imageManifest(1));
    expect((await ws.run()).code).toBe(0);
    const path = join(ws.outDir, 'item-0-1.png');
    writeFileSync(path, Buffer.alloc(statSync(path).size, 7));
    t.sim.service.inject = (req) =>
      req.path.startsWith('/jobs/')
        ? { status: 404, headers: {}, body: { error: { code: 'NOT_FOUND', message: 'gone', details: {} } } }
        : undefined;
    const again = await ws.run();
    expect(again.code, again.stdout).toBe(1);
    expect(again.stdout).toMatch(/failures by code: DOWNLOAD_FAILED 1/);
    expect(readState(ws.statePath).items[0]).toMatchObject({ state: 'downloading', error_code: 'DOWNLOAD_FAILED' });
    // The results list no verified file for it.
    const row = JSON.parse(readFileSync(join(ws.outDir, 'results.jsonl'), 'utf8').trim()) as {
      state: string;
      files: unknown[];
    };
    expect(row).toMatchObject({ state: 'downloading', files: [] });
  });
});
