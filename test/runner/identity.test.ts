import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openSqlite } from '../../src/store/driver.js';
import { describe, expect, it } from 'vitest';
import { idempotencyKey } from '../../src/runner/core/identity.js';
import { imageManifest, readState, workspace } from '../helpers/run.js';
import { startTestSim } from '../helpers/sim.js';

/** The identity an earlier version derived from the manifest's absolute path (runIdFor('/work/m.yaml', 'm')). */
const EARLIER = 'e695c4d3-9c9a-5670-8677-ff946d583385';

describe("a run's identity", () => {
  it('a state made by an earlier version keeps its recorded identity: its next attempts are keyed from it, never re-keyed', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(t.sim, imageManifest(2));
    expect((await ws.run()).code).toBe(0);
    // The state and its place as an earlier version left them: the identity it derived from the path.
    const db = openSqlite(ws.statePath);
    db.prepare("UPDATE meta SET value = ? WHERE key = 'run_id'").run(EARLIER);
    db.close();
    const marker = join(ws.outDir, '.genbatch-outputs.json');
    writeFileSync(marker, JSON.stringify({ ...JSON.parse(readFileSync(marker, 'utf8')), runId: EARLIER }));
    // A new item, sent by this version.
    writeFileSync(join(ws.dir, 'm.yaml'), imageManifest(3));
    expect((await ws.run()).code).toBe(0);
    const added = readState(ws.statePath).attempts.find((a) => a.item_id === 'item-2')!;
    const read = openSqlite(ws.statePath, { readonly: true });
    const hash = (read.prepare("SELECT content_hash FROM items WHERE id = 'item-2'").get() as { content_hash: string })
      .content_hash;
    read.close();
    expect(added.idempotency_key).toBe(idempotencyKey(EARLIER, 'item-2', hash, 1));
    expect(JSON.parse(readFileSync(marker, 'utf8')).runId).toBe(EARLIER);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(3);
  });
});
