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
  const sync = await prepareSync(store, manifest, items, opts, fingerprint);
  const result = store.items.sync(sync.rows, opts.now(), opts.redoChanged);
  sync.finish();
  return result;
}

/** A first sync written a step at a time: `step` writes items for about `budgetMs` and says whether every item is in. */
export interface SyncSteps {
  step(budgetMs: number): boolean;
}

/**
 * The first sync of a state that holds no item yet, in steps: it only
 * inserts, so the run can start on the first items while the rest are
 * written between its own work (a 100,000-row catalog takes a second to
 * write). The sources' fingerprint is recorded after the last step only: a
 * run cut off before that syncs again when it resumes, as after any sync
 * cut off half-way. Undefined when the state already holds items.
 */
export async function syncFreshInSteps(store: Store, manifest: ManifestTop, items: readonly ResolvedItem[], opts: RunOptions, fingerprint?: string): Promise<SyncSteps | undefined> {
  if (!store.items.isEmpty()) return undefined;
  const sync = await prepareSync(store, manifest, items, opts, fingerprint);
  let done = false;
  return {
    step(budgetMs) {
      if (done) return true;
      const deadline = performance.now() + budgetMs;
      done = store.items.insertNew(rowsUntil(sync.rows, deadline), opts.now());
      if (done) sync.finish();
      return done;
    },
  };
}

/** Rows from `rows` until the deadline has passed (looked at every few rows); `return`s true once `rows` has none left. */
function* rowsUntil(rows: Iterator<ItemSync>, deadline: number): Generator<ItemSync, boolean> {
  for (let n = 1; ; n++) {
    const next = rows.next();
    if (next.done) return true;
    yield next.value;
    if (n % 64 === 0 && performance.now() >= deadline) return false;
  }
}

/** The state's run meta, the items' rows (made one at a time), and what to record once they are all written. */
async function prepareSync(store: Store, manifest: ManifestTop, items: readonly ResolvedItem[], opts: RunOptions, fingerprint: string | undefined): Promise<{ rows: Generator<ItemSync>; finish: () => void }> {
  if (!store.meta('run_id')) {
    store.setMeta('run_id', runIdFor(manifest.source.absPath, manifest.name));
    store.setMeta('manifest', manifest.source.absPath);
    store.setMeta('created_at', new Date(opts.now()).toISOString());
    if (opts.rehearsal) store.setMeta('rehearsal', '1');
  }
  // Input files are hashed first (the only async part), so the rows can be made one at a time inside the
  // transaction: a 100,000-row catalog never holds all its rows and their JSON at once.
  const paths = new Set<string>();
  for (const item of items) if (namesFiles(item)) for (const path of filePaths(item)) paths.add(path);
  const inputs = fingerprint === undefined ? [] : await snapshotInputs(paths);
  const fileHashes = new Map<string, string>();
  for (const path of paths) fileHashes.set(path, await fileSha256(path));
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
  return {
    rows: rows(),
    finish: () => {
      if (fingerprint !== undefined) store.setMeta(SYNCED_SOURCES, JSON.stringify({ fingerprint, inputs, items: items.length, shapes: shapes.all() } satisfies SyncedSources));
    },
  };
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

/** Whether the item may name a file: most catalog rows do not, and are passed over without an array each. */
const namesFiles = (item: ResolvedItem) => item.inputs !== undefined || item.image !== undefined || item.referenceImages !== undefined || item.video !== undefined;

const filePaths = (item: ResolvedItem) => fileRefs(item).map((ref) => ref.path);
