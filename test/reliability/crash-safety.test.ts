import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PIPELINE_FILES, PIPELINE_ITEMS } from '../helpers/manifests.js';
import {
  expectNoDoubleChargeAndVerifiedOutputs,
  killLoop,
  outputFilesIn,
  readState,
  workspace,
} from '../helpers/run.js';
import { startTestSim } from '../helpers/sim.js';

const KILLS = 15;
const images = Array.from({ length: 10 }, (_, i) => `  - { id: shot-${i}, prompt: "shot ${i}" }`).join('\n');
const MIXED = `version: 1\ndefaults: { model: studio-xl, aspectRatio: "16:9" }\nitems:\n${images}\n${PIPELINE_ITEMS}`;

describe('crash safety at scale', () => {
  it(`${KILLS} SIGKILLs over generations, edits with uploads and a video chain: no double charge, no lost output, no duplicate upload, no partial file under a final name`, {
    timeout: 180_000,
  }, async () => {
    // Uploads stay valid for the whole test (a day of service time), so any second upload of the same bytes would be a duplicate.
    const t = await startTestSim({
      timeScale: 300,
      dropRate: 0.1,
      latencyMs: [0, 15],
      seed: 23,
      uploadTtlSeconds: 86_400,
    });
    // Every other download is slow, so kills land mid-download too.
    t.sim.storage.inject = (_path, seen) => (seen % 2 === 0 ? 'slow' : undefined);
    const ws = workspace(t.sim, MIXED, PIPELINE_FILES, 300);
    const { kills, final } = await killLoop(t.sim, ws, KILLS);
    expect(kills).toBe(KILLS);
    expect(final.code, final.stdout + final.stderr).toBe(0);

    const charges = t.sim.service.ledger.of('charge');
    expect(charges).toHaveLength(17);
    expect(new Set(charges.map((c) => c.prompt)).size).toBe(17);
    expectNoDoubleChargeAndVerifiedOutputs(t.sim, ws);

    const perContent = new Map<string, number>();
    for (const u of t.sim.service.uploads.byKey.values())
      if (u.uploaded) perContent.set(`${u.sha256}/${u.target}`, (perContent.get(`${u.sha256}/${u.target}`) ?? 0) + 1);
    expect(
      [...perContent.values()].every((n) => n === 1),
      JSON.stringify([...perContent]),
    ).toBe(true);

    // Every file under a final name is a recorded, verified output: no partial file ever got a final name.
    const recorded = new Map(readState(ws.statePath).outputs.map((o) => [o.path, o.sha256]));
    const files = outputFilesIn(ws.outDir);
    expect(files.filter((f) => f.startsWith('.'))).toEqual([]);
    for (const f of files)
      expect(
        createHash('sha256')
          .update(readFileSync(join(ws.outDir, f)))
          .digest('hex'),
      ).toBe(recorded.get(f));
    expect(files).toHaveLength(17);
    console.log(
      `crash safety: ${kills} SIGKILLs, ${t.sim.service.ledger.of('dropped-response').length} dropped responses, ${charges.length} charges for 17 items, ${files.length} outputs verified`,
    );
  });
});
