import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadManifest } from '../../src/manifest/index.js';
import { syncItems } from '../../src/runner/sync/manifest-sync.js';
import { Store } from '../../src/store/index.js';

// Idempotency keys derive from an item's content hash: what only rides along for the results must not move it,
// or every item of a state written before would look changed (and a lost state would mint other keys).
describe("an item's content hash", () => {
  it('is the same with or without the row values the results carry', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'genbatch-hash-'));
    writeFileSync(
      join(dir, 'm.yaml'),
      'version: 1\ndefaults: { model: studio-lite }\nitems:\n  - rows: p.csv\n    id: "{{sku}}"\n    prompt: "{{title}}"\n',
    );
    writeFileSync(join(dir, 'p.csv'), 'sku,title\na,Red mug\n');
    const { loaded } = await loadManifest('m.yaml', dir);
    const opts = { now: Date.now, redoChanged: false, outDir: '/tmp/out' } as Parameters<typeof syncItems>[3];
    const hashOf = async (name: string, items: NonNullable<typeof loaded>['items']) => {
      const store = Store.open(join(dir, name));
      try {
        await syncItems(store, loaded!, items, opts);
        return store.items.get('a')!.content_hash;
      } finally {
        store.close();
      }
    };
    expect(loaded!.items[0]!.values).toEqual({ sku: 'a', title: 'Red mug' });
    const withValues = await hashOf('with.sqlite', loaded!.items);
    const without = await hashOf(
      'without.sqlite',
      loaded!.items.map(({ values: _v, ...item }) => item),
    );
    expect(withValues).toBe(without);
  });
});
