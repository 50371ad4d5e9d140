import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { Catalog } from '../../src/api/catalog.js';
import { checkManifest, loadManifest } from '../../src/manifest/index.js';
import { Runner } from '../../src/runner/index.js';
import {
  itemsInMemory,
  syncedSources,
  syncFreshInSteps,
  syncItems,
  type ItemsToSync,
} from '../../src/runner/sync/manifest-sync.js';
import { DEFAULT_KEY_LIMITS } from '../../src/scheduler/limits.js';
import { Store } from '../../src/store/index.js';
import { expectNoDoubleChargeAndVerifiedOutputs, workspace } from '../helpers/run.js';
import { startTestSim } from '../helpers/sim.js';
import { FolderSink } from '../../src/sink/index.js';
import { testOptions } from '../helpers/run-options.js';
import { Closing } from '../../src/util/closing.js';

// A first run of a large catalog starts on its first items while the rest are written into the state.

const images = (n: number) =>
  Array.from({ length: n }, (_, i) => `  - { id: img-${i}, model: studio-lite, prompt: "product ${i}" }`).join('\n');

async function loaded(manifest: string) {
  const dir = mkdtempSync(join(tmpdir(), 'genbatch-first-sync-'));
  writeFileSync(join(dir, 'm.yaml'), manifest);
  const { loaded } = await loadManifest('m.yaml', dir);
  return { dir, top: loaded! };
}

describe('the first sync of a state, in steps', () => {
  const opts = { now: Date.now, redoChanged: false, outDir: '/tmp/out' } as Parameters<typeof syncItems>[3];

  it('writes a few hundred rows per step, in manifest order, and records the sources only after the last', async () => {
    const { dir, top } = await loaded(`version: 1\nitems:\n${images(600)}\n`);
    const store = Store.open(join(dir, 's.sqlite'));
    try {
      const steps = (await syncFreshInSteps(store, top, top.items, opts, 'fp'))!;
      const written: number[] = [];
      const count = () => Object.values(store.itemReports.counts()).reduce((a, b) => a + b, 0);
      for (let done = false; !done; ) {
        done = await steps.step(0); // a spent budget: the fewest rows a step writes (a batch)
        written.push(count());
        if (!done) expect(syncedSources(store)).toBeUndefined();
      }
      expect(written).toEqual([256, 512, 600, 600]);
      expect(syncedSources(store)).toMatchObject({ fingerprint: 'fp', items: 600 });
      expect(store.queue.ready('image', Date.now(), undefined, 3).map((r) => r.id)).toEqual([
        'img-0',
        'img-1',
        'img-2',
      ]);
      // A state that holds items is synced the usual way, comparing each one.
      expect(await syncFreshInSteps(store, top, top.items, opts, 'fp')).toBeUndefined();
    } finally {
      store.close();
    }
  });

  it('writes a first window whole in its first step, even from a manifest of single items and with its time spent', async () => {
    // A checked manifest expands each single item as a batch of its own: a step cut after the first few would hold back the rest of the first window.
    const { dir, top } = await loaded(`version: 1\nitems:\n${images(12)}\n`);
    const { checked } = await checkManifest('m.yaml', dir);
    const store = Store.open(join(dir, 'single.sqlite'));
    try {
      const steps = (await syncFreshInSteps(store, top, checked!, opts, 'fp'))!;
      expect(await steps.step(0)).toBe(true);
      expect(store.itemReports.counts().pending).toBe(12);
    } finally {
      store.close();
    }
  });

  it('cut off half-way, is completed by the next sync: every item once, the sources recorded', async () => {
    const { dir, top } = await loaded(`version: 1\nitems:\n${images(300)}\n`);
    const path = join(dir, 's.sqlite');
    let store = Store.open(path);
    expect(await (await syncFreshInSteps(store, top, top.items, opts, 'fp'))!.step(0)).toBe(false);
    store.close();
    store = Store.open(path);
    try {
      expect(syncedSources(store)).toBeUndefined();
      const { added } = await syncItems(store, top, top.items, opts, 'fp');
      expect(added).toBe(44);
      expect(store.itemReports.counts().pending).toBe(300);
      expect(syncedSources(store)).toMatchObject({ fingerprint: 'fp', items: 300 });
    } finally {
      store.close();
    }
  });

  it('writes the very items the check read, in steps, even when the rows file changes after the check', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'genbatch-first-sync-'));
    const rows = (n: number, title: string) =>
      `sku,title\n${Array.from({ length: n }, (_, i) => `S-${i},${title} ${i}`).join('\n')}\n`;
    writeFileSync(
      join(dir, 'm.yaml'),
      'version: 1\ndefaults: { model: studio-lite }\nitems:\n  - rows: p.csv\n    id: "{{sku}}"\n    prompt: "{{title}}"\n',
    );
    writeFileSync(join(dir, 'p.csv'), rows(700, 'Mug'));
    const { loaded: expected } = await loadManifest('m.yaml', dir);
    const { checked, issues } = await checkManifest('m.yaml', dir);
    expect(issues.count).toBe(0);
    expect(checked).toMatchObject({ count: 700, shapes: [{ type: 'image', model: 'studio-lite', n: 700 }] });
    // Edited once checked: the run must not write rows nobody checked.
    writeFileSync(join(dir, 'p.csv'), rows(5, 'Bowl'));
    const written = async (name: string, items: Parameters<typeof syncItems>[2]) => {
      const store = Store.open(join(dir, name));
      try {
        const steps = (await syncFreshInSteps(store, checked!, items, opts, 'fp'))!;
        let n = 0;
        while (!(await steps.step(0))) n++;
        return {
          steps: n,
          items: store.items.all().map((r) => [r.id, r.seq, r.content_hash, r.spec]),
          synced: syncedSources(store),
        };
      } finally {
        store.close();
      }
    };
    const fromCheck = await written('checked.sqlite', checked!);
    const fromLoad = await written('loaded.sqlite', expected!.items);
    expect(fromCheck.steps).toBe(3);
    expect(fromCheck.items).toHaveLength(700);
    expect(fromCheck.items).toEqual(fromLoad.items);
    expect(fromCheck.synced).toEqual(fromLoad.synced);
  });

  it('a run on the first rows goes on as the rest come in: an item that waits for a later one, and a type the first rows lack, both run', async () => {
    const t = await startTestSim({ timeScale: 600 });
    // The first item edits the last image (its input is not among the first step's rows), and the only video comes last.
    const edit = '  - { id: edit, model: studio-edit, prompt: "edit of the last", inputs: [{ from: img-149 }] }';
    const clip =
      '  - { id: clip, type: video, model: motion-2, prompt: a spin, duration: 5, resolution: 720p, aspectRatio: "16:9", image: { from: img-0 } }';
    const manifest = `version: 1\nitems:\n${edit}\n${images(150)}\n${clip}\n`;
    const ws = workspace(t.sim, manifest);
    const { top } = await loadManifestIn(ws.dir);
    const store = Store.open(ws.statePath);
    const submissions = () => t.sim.service.ledger.of('request').filter((r) => r.method === 'POST').length;
    let batches = 0;
    // Batches of 20; the first step takes four (a step writes at least 64 rows), and those after wait until the run
    // has submitted: its feed loops meet a state still being written.
    const items: ItemsToSync = {
      ...itemsInMemory(top.items),
      async *batches() {
        for (let at = 0; at < top.items.length; at += 20) {
          if (++batches > 4)
            await vi.waitFor(() => expect(submissions()).toBeGreaterThanOrEqual(5), { timeout: 10_000, interval: 5 });
          yield top.items.slice(at, at + 20);
        }
      },
    };
    try {
      const limits = {
        ...DEFAULT_KEY_LIMITS,
        submit: { count: 10, windowMs: 100 },
        read: { count: 120, windowMs: 100 },
        upload: { count: 30, windowMs: 100 },
      };
      const catalog = await Catalog.fetch(t.client, ['image', 'video']);
      await using closing = new Closing();
      const summary = await new Runner({
        closing,
        options: testOptions({ limits }),
        keys: [{ fingerprint: 'fp-test', client: t.client, limits }],
        store,
        manifest: top,
        catalog,
        toSync: { items, fingerprint: 'sources' },
        outputs: new FolderSink(ws.outDir),
        budget: undefined,
        tuning: { syncStepMs: 0 },
      }).run();
      expect(batches).toBe(8);
      expect(summary.counts.done).toBe(152);
      expect(syncedSources(store)).toMatchObject({ fingerprint: 'sources', items: 152 });
    } finally {
      store.close();
    }
    expect(t.sim.service.ledger.of('charge')).toHaveLength(152);
    expectNoDoubleChargeAndVerifiedOutputs(t.sim, ws);
  });
});

async function loadManifestIn(dir: string) {
  const { loaded } = await loadManifest('m.yaml', dir);
  return { top: loaded! };
}
