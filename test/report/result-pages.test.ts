import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { resultPages, summarizeStore } from '../../src/report/index.js';
import { Store, type ItemSync } from '../../src/store/index.js';

const item = (id: string, seq: number, values: Record<string, string>, model = 'm'): ItemSync => ({
  id,
  seq,
  type: 'image',
  model,
  contentHash: `h-${id}`,
  spec: JSON.stringify({ type: 'image', prompt: `p ${id}`, values }),
  dependsOn: [],
});

describe('the report reads the state a page at a time', () => {
  it('lists every item once, in manifest order, across pages, removed items (which keep an old place) included', () => {
    const store = Store.open(join(mkdtempSync(join(tmpdir(), 'genbatch-pages-')), 's.sqlite'));
    try {
      store.itemSync.sync([item('old-a', 0, { sku: '1' }), item('old-b', 1, { sku: '2' })], 1, false);
      // The manifest changed: old-a and old-b are gone, and new items take their places 0 and 1.
      const now = Array.from({ length: 7 }, (_, i) =>
        item(`n${i}`, i, i === 3 ? { sku: 's', scene: 'x' } : { sku: 's' }, i % 2 ? 'other' : 'm'),
      );
      store.itemSync.sync(now, 2, false);

      const pages = [...resultPages(store, 2)];
      expect(pages.every((p) => p.length <= 2)).toBe(true);
      const ids = pages.flat().map((r) => r.id);
      expect(ids).toHaveLength(9);
      expect(new Set(ids).size).toBe(9);
      expect(ids.filter((id) => id.startsWith('n'))).toEqual(now.map((i) => i.id));
      expect(ids.indexOf('old-a')).toBeLessThan(ids.indexOf('n1'));

      const summary = summarizeStore(store);
      expect(summary.items).toBe(9);
      expect(summary.states.get('pending')).toBe(9);
      expect([...summary.models.keys()]).toEqual(['m', 'other']);
      expect(summary.valueNames).toEqual(['sku', 'scene']);
    } finally {
      store.close();
    }
  });
});
