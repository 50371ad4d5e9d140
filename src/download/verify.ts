import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import { resolveInside } from '../manifest/index.js';

/** An output as recorded when it was verified. */
export interface RecordedOutput {
  path: string;
  bytes: number;
  sha256: string;
  mtime_ms: number | null;
}

export type OutputCheck =
  | { verdict: 'unchanged' }
  /** Touched since (its modification time moved) but still the same bytes. */
  | { verdict: 'same-bytes'; mtimeMs: number }
  | { verdict: 'missing' | 'resized' | 'altered' };

/**
 * Checks a recorded output on disk: by size and modification time, and by
 * sha256 only when either changed, so a resume of a large catalog reads no
 * file that nothing touched.
 */
export async function checkOutput(outDir: string, out: RecordedOutput): Promise<OutputCheck> {
  const path = resolveInside(outDir, out.path);
  const info = await stat(path).catch(() => undefined);
  if (!info?.isFile()) return { verdict: 'missing' };
  if (info.size !== out.bytes) return { verdict: 'resized' };
  const mtimeMs = Math.trunc(info.mtimeMs);
  if (mtimeMs === out.mtime_ms) return { verdict: 'unchanged' };
  const hash = createHash('sha256');
  await pipeline(createReadStream(path), hash);
  return hash.digest('hex') === out.sha256 ? { verdict: 'same-bytes', mtimeMs } : { verdict: 'altered' };
}
