import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { writeReport } from '../../src/report/index.js';
import { Store } from '../../src/store/index.js';
import { runInProcess } from '../helpers/in-process.js';
import { MemorySink } from '../helpers/memory-sink.js';
import { imageManifest, readState, workspace } from '../helpers/run.js';
import { startTestSim } from '../helpers/sim.js';

describe('a run writes where its sink says', () => {
  it('every verified output and the results go to a fake sink, none to the out dir; a resume finds a lost one there and downloads it again, unpaid', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(t.sim, imageManifest(4));
    const sink = new MemorySink();
    const first = await runInProcess(t, ws, { outputs: sink });
    expect(first.counts.done).toBe(4);
    expect(existsSync(ws.outDir)).toBe(false);
    expect(sink.owner?.state).toBe(ws.statePath);
    const outputs = readState(ws.statePath).outputs;
    expect(outputs).toHaveLength(4);
    for (const o of outputs) {
      const file = sink.files.get(o.path)!;
      expect(createHash('sha256').update(file.bytes).digest('hex')).toBe(o.sha256);
    }

    sink.files.delete(outputs[0]!.path);
    const charged = t.sim.service.ledger.of('charge').length;
    const second = await runInProcess(t, ws, { outputs: sink });
    expect(second.counts.done).toBe(4);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(charged);
    expect(sink.files.has(outputs[0]!.path)).toBe(true);

    const store = Store.open(ws.statePath);
    try {
      const written = await writeReport(store, sink, { title: 'm', html: true, sidecars: true, now: Date.now() });
      expect(written).toMatchObject({ items: 4, sidecars: 4, jsonl: 'memory://outputs/results.jsonl' });
    } finally {
      store.close();
    }
    expect([...sink.files.keys()].filter((k) => !k.endsWith('.png')).sort()).toEqual(
      [...outputs.map((o) => `${o.path}.json`).sort(), 'index.html', 'results.csv', 'results.jsonl'].sort(),
    );
  });
});
