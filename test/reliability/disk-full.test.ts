import { existsSync, readdirSync } from 'node:fs';
import { exitCodeOf } from '../../src/library/outcome.js';
import { FolderSink, openFolderFile, type FolderFile } from '../../src/sink/index.js';
import { describe, expect, it } from 'vitest';
import { expectNoDoubleChargeAndVerifiedOutputs, imageManifest, readState, workspace } from '../helpers/run.js';
import { startTestSim } from '../helpers/sim.js';
import { runInProcess } from '../helpers/in-process.js';

/** A real file that takes a few bytes of an output, then fails as a full disk does. */
async function fullDisk(path: string): Promise<FolderFile> {
  const file = await openFolderFile(path);
  if (!path.includes('.png.')) return file;
  let written = 0;
  return {
    ...file,
    async write(chunks) {
      written += chunks.reduce((n, c) => n + c.length, 0);
      if (written > 100) throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
      await file.write(chunks);
    },
  };
}

describe('a full disk while downloading', () => {
  it('stops with a clear message, keeps every state, leaves no partial file; the same run later finishes without a resubmission', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(t.sim, imageManifest(3));
    const first = await runInProcess(t, ws, { outputs: new FolderSink(ws.outDir, { openFile: fullDisk }) });
    expect(exitCodeOf(first)).toBe(4);
    expect(first.stop).toMatchObject({ kind: 'disk' });
    expect(first.stop!.message).toMatch(
      /outputs cannot be saved: .*ENOSPC.*downloads what was paid for without paying again/,
    );
    const states = readState(ws.statePath).items;
    expect(states.some((i) => i.state === 'downloading' && i.error_code === 'DOWNLOAD_FAILED')).toBe(true);
    // Jobs in flight were still polled to their end and recorded: nothing is left running, nothing failed.
    expect(
      states.filter((i) => i.state !== 'pending').every((i) => i.state === 'downloading' || i.state === 'done'),
    ).toBe(true);
    // No output, whole or partial: only the file that names the dir's owner.
    expect(existsSync(ws.outDir) ? readdirSync(ws.outDir) : []).toEqual(['.genbatch-outputs.json']);
    const charged = t.sim.service.ledger.of('charge').length;

    const second = await runInProcess(t, ws);
    expect(exitCodeOf(second)).toBe(0);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(3);
    expect(charged).toBeLessThanOrEqual(3);
    expectNoDoubleChargeAndVerifiedOutputs(t.sim, ws);
  });
});
