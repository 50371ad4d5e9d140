import { readFile } from 'node:fs/promises';
import { Readable } from 'node:stream';
import {
  BucketSink,
  FolderSink,
  ObjectStoreError,
  stagingDirFor,
  type ObjectSource,
  type ObjectStore,
  type StoredObject,
} from '../../src/sink/index.js';
import type { ByteRange } from '../../src/sink/sink.js';

type Op = 'head' | 'putNew' | 'putReplace' | 'get' | 'delete';

/** What a call meets: how the bucket answers it (a fault as its kind and code), or undefined for a normal answer. */
export type BucketFault = (op: Op, key: string) => { fault: ObjectStoreError['fault']; code: string } | undefined;

/**
 * A bucket in memory with the faults of real ones: it slows down, goes
 * silent, refuses the credentials, ignores If-None-Match (as s3rver does);
 * it counts what was put, so a test sees what was uploaded twice.
 */
export class FakeBucket implements ObjectStore {
  readonly bucket = 'catalog';
  readonly objects = new Map<string, { bytes: Buffer; sha256: string | undefined; contentType: string }>();
  /** Every create-only put that stored bytes, by key. */
  readonly puts: string[] = [];
  honoursIfNoneMatch = true;
  fault: BucketFault = () => undefined;

  async head(key: string): Promise<StoredObject | undefined> {
    this.meet('head', key);
    const o = this.objects.get(key);
    return o && { size: o.bytes.length, sha256: o.sha256 };
  }

  async putNew(key: string, source: ObjectSource): Promise<'created' | 'exists'> {
    this.meet('putNew', key);
    if (this.honoursIfNoneMatch && this.objects.has(key)) return 'exists';
    const bytes = await readFile(source.path);
    this.objects.set(key, { bytes, sha256: source.sha256, contentType: source.contentType });
    this.puts.push(key);
    return 'created';
  }

  async putReplace(key: string, source: Omit<ObjectSource, 'sha256'>): Promise<void> {
    this.meet('putReplace', key);
    this.objects.set(key, { bytes: await readFile(source.path), sha256: undefined, contentType: source.contentType });
  }

  async get(key: string, range?: ByteRange): Promise<{ size: number; body: Readable } | undefined> {
    this.meet('get', key);
    const o = this.objects.get(key);
    if (!o) return undefined;
    const bytes = range ? o.bytes.subarray(range.start, range.end + 1) : o.bytes;
    return { size: o.bytes.length, body: Readable.from([bytes]) };
  }

  async delete(key: string): Promise<void> {
    this.meet('delete', key);
    this.objects.delete(key);
  }

  /** The outputs' objects (not the results, the gallery, the marker). */
  outputKeys(): string[] {
    return [...this.objects.keys()].filter((k) => /\.(png|mp4)$/.test(k)).sort();
  }

  private meet(op: Op, key: string): void {
    const f = this.fault(op, key);
    if (f) throw new ObjectStoreError(`${op} ${key}: ${f.code}`, f.fault, f.code);
  }
}

/** A sink that publishes to `bucket` under `prefix`, staging beside the state. */
export function fakeBucketSink(bucket: FakeBucket, statePath: string, prefix = 'spring'): BucketSink {
  return new BucketSink({ bucket: bucket.bucket, prefix }, bucket, new FolderSink(stagingDirFor(statePath)), {
    keepLocal: false,
  });
}
