import type { OutputSink } from './sink.js';

/**
 * `data` written under `relPath` and put in place whole; on any failure (a
 * full disk, the bucket giving up) the temporary goes, its handle closed, and
 * the error is thrown: nothing half-written is left, and no handle is left
 * for the garbage collector to close.
 */
export async function writeWhole(
  sink: Pick<OutputSink, 'create'>,
  relPath: string,
  mode: 'new' | 'replace',
  data: string | Uint8Array,
  options?: { durable?: boolean; output?: boolean },
): Promise<void> {
  const file = await sink.create(relPath, mode, options);
  try {
    await file.write(data);
    await file.commit();
  } catch (error) {
    await file.abort();
    throw error;
  }
}
