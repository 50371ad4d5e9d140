import { dependenciesOf, type LoadedManifest } from '../manifest/index.js';
import type { ItemSync, Store } from '../store/index.js';
import type { RunOptions } from './context.js';
import { fileSha256 } from './inputs.js';
import { contentHashOf, runIdFor } from './keys.js';

/**
 * Writes the manifest's items into the state, with a hash of each one's
 * resolved content (file inputs by their bytes), so later runs can tell an
 * item that changed from one that did not.
 */
export async function syncItems(store: Store, manifest: LoadedManifest, opts: RunOptions): Promise<{ added: number; changed: string[] }> {
  if (!store.meta('run_id')) {
    store.setMeta('run_id', runIdFor(manifest.source.absPath, manifest.name));
    store.setMeta('manifest', manifest.source.absPath);
    store.setMeta('created_at', new Date(opts.now()).toISOString());
    if (opts.rehearsal) store.setMeta('rehearsal', '1');
  }
  // Input files are hashed first (the only async part), so the rows can be made one at a time inside the
  // transaction: a 100,000-row catalog never holds all its rows and their JSON at once.
  const fileHashes = new Map<string, string>();
  for (const item of manifest.items) {
    for (const ref of [...(item.inputs ?? []), item.image, ...(item.referenceImages ?? []), item.video]) {
      if (ref?.kind === 'file' && !fileHashes.has(ref.path)) fileHashes.set(ref.path, await fileSha256(ref.path));
    }
  }
  function* rows(): Generator<ItemSync> {
    for (const [seq, item] of manifest.items.entries()) {
      const { where: _where, ...spec } = item;
      const files: Record<string, string> = {};
      for (const ref of [...(spec.inputs ?? []), spec.image, ...(spec.referenceImages ?? []), spec.video]) {
        if (ref?.kind === 'file') files[ref.display] = fileHashes.get(ref.path)!;
      }
      const portable = JSON.parse(JSON.stringify(spec, (k, v) => (k === 'path' ? undefined : v)));
      const dependsOn = [...new Set(dependenciesOf(item).map((d) => d.id))];
      yield { id: item.id, seq, type: item.type, model: item.model, contentHash: contentHashOf(portable, files), spec: JSON.stringify(spec), dependsOn };
    }
  }
  return store.items.sync(rows(), opts.now(), opts.redoChanged);
}
