import { appendFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { openSqlite } from '../../src/store/driver.js';
import { Store } from '../../src/store/index.js';
import { syncedSources } from '../../src/runner/sync/manifest-sync.js';
import { IMAGE_MODELS } from '../../src/simulator/catalog.js';
import { makePng } from '../../src/simulator/media.js';
import { expectNoDoubleChargeAndVerifiedOutputs, readState, workspace } from '../helpers/run.js';
import { startTestSim } from '../helpers/sim.js';
import { STILL_AND_SPIN } from '../helpers/manifests.js';
import { runCliInProcess } from '../helpers/cli.js';

const MANIFEST = `version: 1
defaults: { model: studio-lite }
items:
  - rows: products.csv
    id: "{{sku}}"
    prompt: "{{title}}, studio product photo"
  - { id: recolor, model: studio-edit, prompt: "make it matte black", inputs: [mug.png] }
`;

const posts = (t: Awaited<ReturnType<typeof startTestSim>>) =>
  t.sim.service.ledger.of('request').filter((r) => r.method === 'POST' && r.path !== '/uploads').length;

describe('a resume of a manifest whose files are as the state last saw them', () => {
  it('a state synced by an earlier version (its shapes name the input `given`) resumes from the state, its items checked as they are', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(t.sim, STILL_AND_SPIN);
    const first = await ws.run();
    expect(first.code, first.stdout + first.stderr).toBe(0);
    // As the earlier version wrote it.
    const db = openSqlite(ws.statePath);
    const recorded = db.prepare("SELECT value FROM meta WHERE key = 'synced_sources'").pluck().get() as string;
    expect(recorded).toContain('"input":"image"');
    db.prepare("UPDATE meta SET value = ? WHERE key = 'synced_sources'").run(
      recorded.replaceAll('"input":', '"given":'),
    );
    db.close();
    // Read as this version names it: the catalog's check of a model's mode against the input it takes needs it.
    const store = Store.open(ws.statePath);
    const shapes = syncedSources(store)?.shapes ?? [];
    store.close();
    expect(shapes.map((shape) => shape.input).sort()).toEqual(['image', null]);
    const resumed = await ws.run();
    expect(resumed.code, resumed.stdout + resumed.stderr).toBe(0);
    expect(resumed.stderr).toMatch(/2 items read from the state/);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(2);
  });

  it('reads its items from the state; any edit to the manifest, a rows file or an input file is loaded and compared anew', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(t.sim, MANIFEST, {
      'products.csv': 'sku,title\nmug-1,Red mug\nmug-2,Blue mug\n',
      'mug.png': makePng('mug'),
    });
    const first = await ws.run();
    expect(first.code, first.stdout + first.stderr).toBe(0);
    expect(first.stderr).not.toMatch(/resuming/);
    expect(posts(t)).toBe(3);

    const unchanged = await ws.run();
    expect(unchanged.code).toBe(0);
    expect(unchanged.stderr).toMatch(
      /resuming: m\.yaml and its files are as the state last saw them; 3 items read from the state/,
    );
    expect(posts(t)).toBe(3);

    // A row's title edited: the item is found changed (kept, not paid again), never taken from the state as it was.
    writeFileSync(join(ws.dir, 'products.csv'), 'sku,title\nmug-1,Green mug\nmug-2,Blue mug\n');
    const rowEdited = await ws.run();
    expect(rowEdited.stderr).not.toMatch(/resuming/);
    expect(rowEdited.stdout).toMatch(/1 item changed after they were submitted.*mug-1/);

    // An input file's new bytes: the edit item is found changed.
    writeFileSync(join(ws.dir, 'mug.png'), makePng('another mug'));
    const inputEdited = await ws.run();
    expect(inputEdited.stderr).not.toMatch(/resuming/);
    expect(inputEdited.stdout).toMatch(/2 items changed after they were submitted.*mug-1, recolor/);

    // A new row is a new item, submitted once; after that the state is trusted again.
    appendFileSync(join(ws.dir, 'products.csv'), 'mug-3,White mug\n');
    const rowAdded = await ws.run();
    expect(rowAdded.code).toBe(0);
    expect(posts(t)).toBe(4);
    const again = await ws.run();
    expect(again.stderr).toMatch(/4 items read from the state/);
    expect(again.stdout).toMatch(/2 items changed after they were submitted/);
    expect(posts(t)).toBe(4);
    expect(Object.fromEntries(readState(ws.statePath).items.map((i) => [i.id, i.state]))).toEqual({
      'mug-1': 'done',
      'mug-2': 'done',
      'mug-3': 'done',
      recolor: 'done',
    });
    expectNoDoubleChargeAndVerifiedOutputs(t.sim, ws);
  });

  it('a model the service no longer has is found before anything is sent, with its place in the manifest', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(
      t.sim,
      'version: 1\nitems:\n  - { id: a, model: studio-lite, prompt: "a mug" }\n  - { id: b, model: studio-lite, prompt: "a cup" }\n',
    );
    expect((await ws.run(['--max-credits', '2'])).code).toBe(3);
    const before = posts(t);
    // The service retires the model between the two runs.
    const at = IMAGE_MODELS.findIndex((m) => m.id === 'studio-lite');
    const [retired] = IMAGE_MODELS.splice(at, 1);
    onTestFinished(() => void IMAGE_MODELS.splice(at, 0, retired!));
    const resumed = await ws.run();
    expect(resumed.code).toBe(2);
    expect(resumed.stdout + resumed.stderr).toMatch(/m\.yaml:3:\d+.*unknown image model "studio-lite"/);
    expect(posts(t)).toBe(before);
  });
});

describe('items removed from the manifest', () => {
  it('are never started, are not counted in done n/total, and are reported as removed', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const three =
      'version: 1\ndefaults: { model: studio-lite }\nitems:\n  - { id: a, prompt: "a mug" }\n  - { id: b, prompt: "a cup" }\n  - { id: c, prompt: "a bowl" }\n';
    const ws = workspace(t.sim, three);
    // A budget of 2 credits: a is paid for, then the run stops with b and c pending.
    expect((await ws.run(['--max-credits', '2'])).code).toBe(3);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(1);
    writeFileSync(
      join(ws.dir, 'm.yaml'),
      'version: 1\ndefaults: { model: studio-lite }\nitems:\n  - { id: a, prompt: "a mug" }\n  - { id: b, prompt: "a cup" }\n',
    );
    const res = await ws.run();
    expect(res.code, res.stdout + res.stderr).toBe(0);
    expect(res.stdout).toMatch(/^done 2\/2$/m);
    expect(res.stdout).toMatch(
      /1 item of an earlier version of the manifest is no longer in it: not run and not counted here/,
    );
    // c was never sent: 2 charges in all, for a and b.
    expect(t.sim.service.ledger.of('charge')).toHaveLength(2);
    expect(
      readState(ws.statePath)
        .attempts.map((x) => x.item_id)
        .sort(),
    ).toEqual(['a', 'b']);
    const status = JSON.parse((await runCliInProcess(['status', 'm.yaml', '--json'], ws.env, ws.dir)).stdout) as {
      items: Record<string, number>;
      removed: number;
    };
    expect(status.items).toMatchObject({ total: 2, done: 2, pending: 0 });
    expect(status.removed).toBe(1);
    // Put back, the item runs again: it is counted and sent.
    writeFileSync(join(ws.dir, 'm.yaml'), three);
    expect((await ws.run()).code).toBe(0);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(3);
  });
});
