import { cpSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadManifest } from '../../src/manifest/index.js';
import { syncItems, syncedSources } from '../../src/runner/sync/manifest-sync.js';
import { Store, type ItemShape } from '../../src/store/index.js';

const sorted = (shapes: ItemShape[]) => shapes.map((s) => JSON.stringify(s)).sort();

// A resume checks the state's item shapes against the service's catalog from what the sync counted; those must be
// the shapes the state's items have, or a resume would let through an item a full load refuses (or refuse one it takes).
describe('the item shapes a sync records', () => {
  it.each(['video-pipeline.yaml', 'catalog.yaml', 'demo.yaml', 'draft-final.yaml'])(
    'are those the state holds, for manifests/%s',
    async (name) => {
      const dir = mkdtempSync(join(tmpdir(), 'genbatch-shapes-'));
      cpSync(join(import.meta.dirname, '..', '..', 'manifests'), dir, { recursive: true });
      const { loaded, issues } = await loadManifest(name, dir);
      expect(issues.count).toBe(0);
      const store = Store.open(join(dir, 'state.sqlite'));
      try {
        await syncItems(
          store,
          loaded!,
          loaded!.items,
          { now: Date.now, redoChanged: false, outDir: '/tmp/out' } as Parameters<typeof syncItems>[3],
          'fingerprint',
        );
        const recorded = syncedSources(store)!.shapes!;
        expect(recorded.reduce((n, s) => n + s.n, 0)).toBe(loaded!.items.length);
        expect(sorted(recorded)).toEqual(sorted(store.itemSync.shapes()));
      } finally {
        store.close();
      }
    },
  );
});
