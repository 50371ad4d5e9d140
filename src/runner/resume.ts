import { existsSync } from 'node:fs';
import { loadManifestTop, type ManifestTop } from '../manifest/index.js';
import { Store, type ItemShape } from '../store/index.js';
import { inputsUnchanged, sourcesFingerprint, type SyncedSources } from './sources.js';
import { syncedSources } from './sync.js';

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
 * the caller then loads and validates the whole manifest, and records
 * `fingerprint` with the items it writes. The fingerprint is taken before
 * that load, so a file edited meanwhile is never taken for the bytes loaded;
 * `top` is returned for that load, which then expands the very text hashed.
 */
export async function planResume(path: string, cwd: string, statePathOf: (top: ManifestTop) => string, fromState: boolean): Promise<{ resume?: StateResume; fingerprint?: string; top?: ManifestTop }> {
  const top = await loadManifestTop(path, cwd);
  if (!top) return {};
  const fingerprint = await sourcesFingerprint(top);
  if (fingerprint === undefined) return { top };
  const statePath = statePathOf(top);
  if (!fromState || !existsSync(statePath)) return { fingerprint, top };
  let store: Store;
  try {
    store = Store.openReadOnly(statePath);
  } catch {
    return { fingerprint, top }; // the full path reports what is wrong with it
  }
  try {
    const synced = syncedSources(store);
    if (!synced || synced.fingerprint !== fingerprint || !(await inputsUnchanged(synced.inputs))) return { fingerprint, top };
    return { resume: { top, synced, shapes: synced.shapes ?? store.items.shapes() }, fingerprint };
  } finally {
    store.close();
  }
}
