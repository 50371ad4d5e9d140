import { dependenciesOf, type InputRef, type ManifestTop, type ResolvedItem } from '../manifest/index.js';
import type { ItemShape, ItemSync, Store } from '../store/index.js';
import type { RunOptions } from './context.js';
import { fileSha256 } from './inputs.js';
import { contentHashOf, runIdFor } from './keys.js';
import { snapshotInputs, type SyncedSources } from './sources.js';

const SYNCED_SOURCES = 'synced_sources';

/**
 * Writes the manifest's items into the state, with a hash of each one's
 * resolved content (file inputs by their bytes), so later runs can tell an
 * item that changed from one that did not. With the sources' fingerprint,
 * records what the items were written from, for a resume to skip this.
 */
export async function syncItems(store: Store, manifest: ManifestTop, items: readonly ResolvedItem[], opts: RunOptions, fingerprint?: string): Promise<{ added: number; changed: string[] }> {
  if (!store.meta('run_id')) {
    store.setMeta('run_id', runIdFor(manifest.source.absPath, manifest.name));
    store.setMeta('manifest', manifest.source.absPath);
    store.setMeta('created_at', new Date(opts.now()).toISOString());
    if (opts.rehearsal) store.setMeta('rehearsal', '1');
  }
  // Input files are hashed first (the only async part), so the rows can be made one at a time inside the
  // transaction: a 100,000-row catalog never holds all its rows and their JSON at once.
  const fileHashes = new Map<string, string>();
  const inputs = fingerprint === undefined ? [] : await snapshotInputs(new Set(items.flatMap(filePaths)));
  for (const item of items) {
    for (const path of filePaths(item)) if (!fileHashes.has(path)) fileHashes.set(path, await fileSha256(path));
  }
  const shapes = new ShapeTally();
  function* rows(): Generator<ItemSync> {
    for (const [seq, item] of items.entries()) {
      shapes.add(item);
      const { where: _where, ...spec } = item;
      // The row's values ride along for the results but are not content: the keys of earlier runs stay as they were.
      const { values: _values, ...content } = spec;
      const files: Record<string, string> = {};
      for (const ref of fileRefs(item)) files[ref.display] = fileHashes.get(ref.path)!;
      const dependsOn = [...new Set(dependenciesOf(item).map((d) => d.id))];
      yield { id: item.id, seq, type: item.type, model: item.model, contentHash: contentHashOf(content, files), spec: JSON.stringify(spec), dependsOn };
    }
  }
  // Cleared first: a sync cut off half-way must never pass for the one the fingerprint names.
  store.deleteMeta(SYNCED_SOURCES);
  const result = store.items.sync(rows(), opts.now(), opts.redoChanged);
  if (fingerprint !== undefined) store.setMeta(SYNCED_SOURCES, JSON.stringify({ fingerprint, inputs, items: items.length, shapes: shapes.all() } satisfies SyncedSources));
  return result;
}

/** What the state's items were last written from, if a sync recorded it. */
export function syncedSources(store: Store): SyncedSources | undefined {
  const text = store.meta(SYNCED_SOURCES);
  return text === undefined ? undefined : (JSON.parse(text) as SyncedSources);
}

/**
 * The items' shapes as `Items.shapes()` reads them from the state, counted while
 * the items are written: a resume then checks them against the service without
 * reading every item's JSON (0.3 s at 100,000 items).
 */
export class ShapeTally {
  private readonly byKey = new Map<string, ItemShape>();

  add(item: ResolvedItem): void {
    const given: ItemShape['given'] = item.image !== undefined ? 'image' : item.referenceImages !== undefined ? 'referenceImages' : item.video !== undefined ? 'video' : item.source !== undefined ? 'source' : null;
    const edits = item.inputs !== undefined ? 1 : 0;
    // A string key, not the shape's JSON: this runs for every item of the catalog.
    const key = `${item.type}\u0000${item.model}\u0000${item.aspectRatio}\u0000${item.resolution}\u0000${item.duration}\u0000${edits}\u0000${given}`;
    const seen = this.byKey.get(key);
    if (seen) seen.n++;
    else this.byKey.set(key, { type: item.type, model: item.model, aspectRatio: item.aspectRatio ?? null, resolution: item.resolution ?? null, duration: item.duration ?? null, edits, given, n: 1 });
  }

  all(): ItemShape[] {
    return [...this.byKey.values()];
  }
}

/** The item's local file inputs, in the order its fields name them. */
function fileRefs(item: ResolvedItem): Extract<InputRef, { kind: 'file' }>[] {
  return [...(item.inputs ?? []), item.image, ...(item.referenceImages ?? []), item.video].filter((ref): ref is Extract<InputRef, { kind: 'file' }> => ref?.kind === 'file');
}

const filePaths = (item: ResolvedItem) => fileRefs(item).map((ref) => ref.path);
