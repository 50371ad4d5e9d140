import { createHash } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { ManifestTop } from '../../manifest/index.js';
import type { ItemShape } from '../../store/index.js';
import { GENBATCH_VERSION } from '../../util/version.js';

/**
 * What the state's items were last written from: the manifest's and its rows
 * files' bytes (with genbatch's version, since another version may expand
 * them otherwise), and each input file's size and modification time. A
 * resumed run whose sources are all as recorded can take its items from the
 * state instead of expanding and checking 100,000 rows again.
 */
export interface SyncedSources {
  fingerprint: string;
  /** [absolute path, size, mtimeMs] of every file input. */
  inputs: [string, number, number][];
  /** How many items the manifest had. */
  items: number;
  /** The items' shapes, counted as they were written (absent in a state synced by an earlier version). */
  shapes?: ItemShape[];
}

/**
 * The fingerprint of the manifest and its rows files, with the rows files'
 * bytes as they were hashed (by absolute path): a check of the manifest then
 * expands the very bytes the fingerprint names. Undefined when one cannot be read.
 */
export async function sourcesFingerprint(
  top: ManifestTop,
): Promise<{ fingerprint: string; rows: Map<string, Buffer> } | undefined> {
  const hash = createHash('sha256')
    .update(`genbatch ${GENBATCH_VERSION}\n${top.source.absPath}\n`)
    .update(top.source.text);
  const rows = new Map<string, Buffer>();
  for (const item of top.manifest.items) {
    if (item.rows === undefined) continue;
    const path = resolve(top.source.dir, item.rows);
    hash.update(`\n${path}\n`);
    try {
      // Read whole, in one call: a 100,000-row file is a few megabytes, and a stream would take it 64 KB at a time.
      const bytes = rows.get(path) ?? (await readFile(path));
      rows.set(path, bytes);
      hash.update(bytes);
    } catch {
      return undefined;
    }
  }
  return { fingerprint: hash.digest('hex'), rows };
}

/** Size and modification time of each input file, as the sync saw them. */
export async function snapshotInputs(paths: Iterable<string>): Promise<SyncedSources['inputs']> {
  const out: SyncedSources['inputs'] = [];
  for (const path of paths) {
    const s = await stat(path);
    out.push([path, s.size, s.mtimeMs]);
  }
  return out;
}

/** Every input file still has the size and modification time it had at the sync. */
export async function inputsUnchanged(inputs: SyncedSources['inputs']): Promise<boolean> {
  for (const [path, size, mtimeMs] of inputs) {
    const s = await stat(path).catch(() => undefined);
    if (!s || s.size !== size || s.mtimeMs !== mtimeMs) return false;
  }
  return true;
}
