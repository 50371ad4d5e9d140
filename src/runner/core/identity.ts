import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { isAbsolute, relative, sep } from 'node:path';
import type * as Uuid from 'uuid';
import type { ManifestTop } from '../../manifest/index.js';
import { canonicalJson } from '../../util/canonical-json.js';

// uuid's CommonJS build: its ES module build is some twenty files, 15 ms more of every start.
const { v5: uuidv5 } = createRequire(import.meta.url)('uuid') as typeof Uuid;

/** genbatch's own UUID namespace for name-based (v5) UUIDs. */
const NAMESPACE = 'a7c6e0d2-5a3e-4b8e-9f61-2f1d7c9b4e10';

/**
 * A run's identity, from what a team means by "this run": the manifest's
 * `id:`, else its name and where its outputs go. Never a path of this
 * machine: the same manifest run from another checkout, or another machine,
 * resends the same idempotency keys. A state keeps the identity it recorded
 * first (`run_id`), whatever this gives later.
 */
export function runIdFor(top: Pick<ManifestTop, 'name' | 'manifest' | 'source'>, outDir: string): string {
  if (top.manifest.id !== undefined) return uuidv5(`run-id\n${top.manifest.id}`, NAMESPACE);
  return uuidv5(`run\n${top.name}\n${destinationOf(outDir, top.source.dir)}`, NAMESPACE);
}

/**
 * Where the outputs go, as every machine names it: a bucket's URL; a folder
 * inside the manifest's own, relative to it (a checkout elsewhere is the
 * same run); any other folder by its absolute path.
 */
function destinationOf(outDir: string, manifestDir: string): string {
  if (/^s3:\/\//i.test(outDir)) return outDir.replace(/\/+$/, '');
  const inside = relative(manifestDir, outDir);
  return inside && !inside.startsWith('..') && !isAbsolute(inside) ? inside.split(sep).join('/') : outDir;
}

/**
 * The idempotency key of one attempt: deterministic in run, item, content and
 * attempt, so a lost state file still resends the same key for the same work.
 */
export function idempotencyKey(runId: string, itemId: string, contentHash: string, attempt: number): string {
  return uuidv5(`attempt\n${runId}\n${itemId}\n${contentHash}\n${attempt}`, NAMESPACE);
}

export function sha256(text: string | Buffer): string {
  return createHash('sha256').update(text).digest('hex');
}

export function contentHashOf(spec: unknown, fileHashes: Record<string, string>): string {
  // As canonicalJson({ spec, files }) wrote it, with local paths left out of the spec (they differ between machines).
  return sha256(`{"files":${canonicalJson(fileHashes)},"spec":${canonicalJson(spec, 'path')}}`);
}

const hashes = new Map<string, { version: string; hash: Promise<string> }>();

/**
 * sha256 of a file, streamed; memoised per path while its size and
 * modification time stay the same (a file edited during a multi-day run is
 * hashed anew, so its new bytes are uploaded, not the old key reused).
 */
export async function fileSha256(path: string): Promise<string> {
  const s = await stat(path);
  const version = `${s.size}:${s.mtimeMs}`;
  const known = hashes.get(path);
  if (known?.version === version) return known.hash;
  const hash = new Promise<string>((resolve, reject) => {
    const h = createHash('sha256');
    createReadStream(path)
      .on('data', (c) => h.update(c))
      .on('error', reject)
      .on('end', () => resolve(h.digest('hex')));
  });
  hashes.set(path, { version, hash });
  return hash;
}
