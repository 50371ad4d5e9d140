import {
  dependenciesOf,
  fileInputsOf,
  gatesOf,
  ItemsTally,
  type ManifestTop,
  type ResolvedItem,
} from '../../manifest/index.js';
import type { ItemShape, ItemSync, Store } from '../../store/index.js';
import { contentHashOf, fileSha256, runIdFor } from '../core/identity.js';
import { snapshotInputs, type SyncedSources } from './sources.js';
import type { ResolvedRunOptions } from '../../options/resolve.js';

/** What a sync reads of the run's options (a canary or --only makes the run wait for every item), its clock and its step. */
export type SyncView = Pick<ResolvedRunOptions, 'redoChanged' | 'simulate' | 'canary' | 'only'> & {
  now: () => number;
  /** Where the outputs go: with the manifest's name, the run's identity (unless the manifest gives an `id:`). */
  outDir: string;
  /** How long a step of a first sync may hold the event loop. */
  syncStepMs?: number | undefined;
};

const SYNCED_SOURCES = 'synced_sources';

/**
 * The manifest's items as a run writes them into the state: how many, their
 * shapes and input files (known before the first is written), and the items
 * themselves a batch at a time. A first start does not hold them: a checked
 * manifest expands them again, from what its check read.
 */
export interface ItemsToSync {
  readonly count: number;
  readonly shapes: readonly ItemShape[];
  /** Absolute paths of the local files the items take as inputs. */
  readonly inputFiles: ReadonlySet<string>;
  batches(): AsyncIterable<readonly ResolvedItem[]>;
}

/** Items already in memory (a loaded manifest's), as a sync takes them. */
export function itemsInMemory(items: readonly ResolvedItem[]): ItemsToSync {
  const tally = new ItemsTally();
  for (const item of items) tally.add(item);
  return {
    count: items.length,
    shapes: tally.shapes(),
    inputFiles: tally.inputFiles,
    async *batches() {
      for (let at = 0; at < items.length; at += IN_MEMORY_BATCH) yield items.slice(at, at + IN_MEMORY_BATCH);
    },
  };
}

const IN_MEMORY_BATCH = 256;
/** The fewest rows a step of a first sync writes (unless the items end first): more than a first window's submissions. */
const STEP_ROWS = 64;

const toSource = (items: ItemsToSync | readonly ResolvedItem[]): ItemsToSync =>
  isList(items) ? itemsInMemory(items) : items;
const isList = (items: ItemsToSync | readonly ResolvedItem[]): items is readonly ResolvedItem[] => Array.isArray(items);

/**
 * Writes the manifest's items into the state, with a hash of each one's
 * resolved content (file inputs by their bytes), so later runs can tell an
 * item that changed from one that did not. With the sources' fingerprint,
 * records what the items were written from, for a resume to skip this.
 * Every item is in memory at once here (one transaction compares them all).
 */
export async function syncItems(
  store: Store,
  manifest: ManifestTop,
  items: ItemsToSync | readonly ResolvedItem[],
  options: SyncView,
  fingerprint?: string,
): Promise<{ added: number; changed: string[] }> {
  const source = toSource(items);
  const all = isList(items) ? items : await collect(source);
  const sync = await prepareSync(store, manifest, source, options, fingerprint);
  const result = store.itemSync.sync(rowsOf(all, sync.row), options.now(), options.redoChanged);
  sync.finish();
  return result;
}

function* rowsOf(
  items: readonly ResolvedItem[],
  row: (item: ResolvedItem, seq: number) => ItemSync,
): Generator<ItemSync> {
  for (let seq = 0; seq < items.length; seq++) yield row(items[seq]!, seq);
}

async function collect(source: ItemsToSync): Promise<ResolvedItem[]> {
  const all: ResolvedItem[] = [];
  for await (const batch of source.batches()) for (const item of batch) all.push(item);
  return all;
}

/** A first sync written a step at a time: `step` writes items for about `budgetMs` and says whether every item is in. */
export interface SyncSteps {
  step(budgetMs: number): Promise<boolean>;
}

/**
 * The first sync of a state that holds no item yet, in steps: it only
 * inserts, so the run can start on the first items while the rest are
 * written between its own work (a 100,000-row catalog takes a second to
 * write). Each step writes the next items, at least STEP_ROWS a
 * transaction, until its time is up. The sources' fingerprint is recorded after the last
 * step only: a run cut off before that syncs again when it resumes, as after
 * any sync cut off half-way. Undefined when the state already holds items.
 */
export async function syncFreshInSteps(
  store: Store,
  manifest: ManifestTop,
  items: ItemsToSync | readonly ResolvedItem[],
  options: SyncView,
  fingerprint?: string,
): Promise<SyncSteps | undefined> {
  if (!store.itemSync.isEmpty()) return undefined;
  const source = toSource(items);
  const sync = await prepareSync(store, manifest, source, options, fingerprint);
  const batches = source.batches()[Symbol.asyncIterator]();
  let seq = 0;
  let done = false;
  return {
    async step(budgetMs) {
      const deadline = performance.now() + budgetMs;
      while (!done) {
        // At least STEP_ROWS a transaction: a manifest of single items gives its items one at a time, and a first
        // step cut after a few of them would hold the rest of the first window back to later steps.
        const rows: ItemSync[] = [];
        while (rows.length < STEP_ROWS) {
          const next = await batches.next();
          if (next.done) {
            done = true;
            break;
          }
          for (const item of next.value) rows.push(sync.row(item, seq++));
        }
        if (rows.length) store.itemSync.insertNew(rows, options.now());
        if (done) sync.finish();
        if (performance.now() >= deadline) break;
      }
      return done;
    },
  };
}

/** The state's run meta, how to make an item's row, and what to record once they are all written. */
async function prepareSync(
  store: Store,
  manifest: ManifestTop,
  source: ItemsToSync,
  options: SyncView,
  fingerprint: string | undefined,
): Promise<{ row: (item: ResolvedItem, seq: number) => ItemSync; finish: () => void }> {
  // Input files are hashed first (the only async part), so the rows can be made one at a time as they are written:
  // a 100,000-row catalog never holds all its rows and their JSON at once.
  const inputs = fingerprint === undefined ? [] : await snapshotInputs(source.inputFiles);
  const fileHashes = new Map<string, string>();
  for (const path of source.inputFiles) fileHashes.set(path, await fileSha256(path));
  // One commit, one flush, for the run's meta. The sources are cleared first: a sync cut off half-way must never pass for the one the fingerprint names.
  store.tx(() => {
    if (!store.meta('run_id')) {
      store.setMeta('run_id', runIdFor(manifest, options.outDir));
      store.setMeta('manifest', manifest.source.absPath);
      store.setMeta('created_at', new Date(options.now()).toISOString());
      if (options.simulate) store.setMeta('rehearsal', '1');
    }
    // Which manifest the state is for, by name: a decision given another manifest is refused (states older than this
    // learn it from their next run).
    if (!store.meta('manifest_name')) store.setMeta('manifest_name', manifest.name);
    store.deleteMeta(SYNCED_SOURCES);
  });
  return {
    row(item, seq) {
      // The priority orders the work; it is neither the request nor content.
      // Its gates are kept in their own table, not in the spec: a gate added or removed is no change of the item.
      const { where: _where, priority, gates: _gates, ...spec } = item;
      // The row's values, the finishing and a gate's approval timeout ride along but are not content: the keys of earlier
      // runs stay as they were.
      const { values: _values, tags: _tags, finish: _finish, approval: _approval, ...content } = spec;
      const files: Record<string, string> = {};
      for (const ref of fileInputsOf(item)) files[ref.display] = fileHashes.get(ref.path)!;
      const gates = gatesOf(item);
      // A gate is waited for like an input: made first, and its failure skips the item.
      const dependsOn = [...new Set([...dependenciesOf(item).map((d) => d.id), ...gates])];
      return {
        id: item.id,
        seq,
        type: item.type,
        model: item.model,
        contentHash: contentHashOf(content, files),
        spec: JSON.stringify(spec),
        dependsOn,
        gates,
        priority: priority ?? 0,
      };
    },
    finish: () => {
      // A gate written after the items it gates (later in the manifest) settles them now.
      store.gates.settleAll();
      if (fingerprint !== undefined)
        store.setMeta(
          SYNCED_SOURCES,
          JSON.stringify({
            fingerprint,
            inputs,
            items: source.count,
            shapes: [...source.shapes],
          } satisfies SyncedSources),
        );
    },
  };
}

/** What the state's items were last written from, if a sync recorded it. */
export function syncedSources(store: Store): SyncedSources | undefined {
  const text = store.meta(SYNCED_SOURCES);
  if (text === undefined) return undefined;
  const synced = JSON.parse(text) as SyncedSources;
  // A state synced by an earlier version names a shape's input `given`.
  for (const shape of synced.shapes ?? []) {
    const recorded = shape as ItemShape & { given?: ItemShape['input'] };
    if (recorded.input === undefined && recorded.given !== undefined) {
      recorded.input = recorded.given;
      delete recorded.given;
    }
  }
  return synced;
}
