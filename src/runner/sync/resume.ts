import { existsSync } from 'node:fs';
import { loadManifestTop, type ManifestTop } from '../../manifest/index.js';
import { Store, type ItemShape } from '../../store/index.js';
import { inputsUnchanged, sourcesFingerprint, type SyncedSources } from './sources.js';
import { syncedSources } from './manifest-sync.js';

/** A resume that can take its items from the state: the manifest's top level, and what the state holds. */
export interface StateResume {
  top: ManifestTop;
  synced: SyncedSources;
  shapes: ItemShape[];
}

/**
 * When the manifest, its rows files and its input files are exactly as they
 * were when the state's items were last written from them, the state already
 * holds every item as the manifest would expand now: a resume need not
 * expand and check 100,000 rows again. `resume` is undefined on any doubt;
 * the caller then checks the whole manifest, and records `fingerprint` with
 * the items it writes. `top` and `rowsRead` (the rows files' bytes) are
 * returned for that check, which then expands the very text and bytes hashed:
 * a file edited meanwhile is never taken for the bytes checked.
 */
export async function planResume(
  path: string,
  cwd: string,
  /** Where its state is, for sources of this fingerprint; undefined where none can be. */
  statePathOf: (top: ManifestTop, fingerprint: string) => string | undefined | Promise<string | undefined>,
  fromState: boolean,
): Promise<{ resume?: StateResume; fingerprint?: string; top?: ManifestTop; rowsRead?: ReadonlyMap<string, Buffer> }> {
  const top = await loadManifestTop(path, cwd);
  if (!top) return {};
  const sources = await sourcesFingerprint(top);
  if (sources === undefined) return { top };
  const { fingerprint, rows: rowsRead } = sources;
  const statePath = fromState ? await statePathOf(top, fingerprint) : undefined;
  if (statePath === undefined || !existsSync(statePath)) return { fingerprint, top, rowsRead };
  let store: Store;
  try {
    store = Store.openReadOnly(statePath);
  } catch {
    return { fingerprint, top, rowsRead }; // the full path reports what is wrong with it
  }
  try {
    const synced = syncedSources(store);
    if (!synced || synced.fingerprint !== fingerprint || !(await inputsUnchanged(synced.inputs)))
      return { fingerprint, top, rowsRead };
    return { resume: { top, synced, shapes: synced.shapes ?? store.itemSync.shapes() }, fingerprint };
  } finally {
    store.close();
  }
}

/** Whether the state at `statePath` holds items written from sources of this fingerprint (read only; false on any doubt). */
export function holdsSources(statePath: string, fingerprint: string): boolean {
  if (!existsSync(statePath)) return false;
  try {
    const store = Store.openReadOnly(statePath);
    try {
      return syncedSources(store)?.fingerprint === fingerprint;
    } finally {
      store.close();
    }
  } catch {
    return false;
  }
}
