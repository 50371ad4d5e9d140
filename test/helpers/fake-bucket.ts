import { readFile } from 'node:fs/promises';
import { Readable } from 'node:stream';
import {
  BucketSink,
  FolderSink,
  BucketError,
  stagingDirFor,
  type ObjectSource,
  type BucketClient,
  type Patience,
  type BucketCall,
  type BucketObject,
} from '../../src/sink/index.js';
import type { ByteRange } from '../../src/sink/sink.js';

type Op = 'head' | 'putNew' | 'putReplace' | 'get' | 'delete';

/**
 * What a call meets: how the bucket answers it (a fault as its kind and code), `'silent'` (it never answers: only
 * the call's own abort ends it), or undefined for a normal answer.
 */
export type BucketFault = (op: Op, key: string) => { fault: BucketError['fault']; code: string } | 'silent' | undefined;

/**
 * A bucket in memory with the faults of real ones: it slows down, goes
 * silent, refuses the credentials, ignores If-None-Match (as s3rver does);
 * it counts what was put, so a test sees what was uploaded twice.
 */
export class FakeBucket implements BucketClient {
  readonly bucket = 'catalog';
  readonly objects = new Map<string, { bytes: Buffer; sha256: string | undefined; contentType: string }>();
  /** Every create-only put of an output or a copy that stored bytes, by key. */
  readonly puts: string[] = [];
  /** Every snapshot of the state put beside the outputs. */
  readonly snapshotPuts: string[] = [];
  honoursIfNoneMatch = true;
  fault: BucketFault = () => undefined;

  /** Calls that met silence and were abandoned by their caller. */
  abandoned = 0;

  async head(key: string, call?: BucketCall): Promise<BucketObject | undefined> {
    await this.meet('head', key, call);
    const o = this.objects.get(key);
    return o && { size: o.bytes.length, sha256: o.sha256 };
  }

  async putNew(key: string, source: ObjectSource, call?: BucketCall): Promise<'created' | 'exists'> {
    await this.meet('putNew', key, call);
    if (this.honoursIfNoneMatch && this.objects.has(key)) return 'exists';
    const bytes = await readFile(source.path);
    this.objects.set(key, { bytes, sha256: source.sha256, contentType: source.contentType });
    // The state's snapshots are counted apart: `puts` is what the run published.
    if (key.includes('.genbatch/state/')) this.snapshotPuts.push(key);
    else this.puts.push(key);
    return 'created';
  }

  async putReplace(key: string, source: Omit<ObjectSource, 'sha256'>, call?: BucketCall): Promise<void> {
    await this.meet('putReplace', key, call);
    this.objects.set(key, { bytes: await readFile(source.path), sha256: undefined, contentType: source.contentType });
  }

  async get(key: string, range?: ByteRange, call?: BucketCall): Promise<{ size: number; body: Readable } | undefined> {
    await this.meet('get', key, call);
    const o = this.objects.get(key);
    if (!o) return undefined;
    const bytes = range ? o.bytes.subarray(range.start, range.end + 1) : o.bytes;
    return { size: o.bytes.length, body: Readable.from([bytes]) };
  }

  /** How many times it was closed: a run closes its bucket once. */
  closed = 0;

  close(): void {
    this.closed++;
  }

  async delete(key: string, call?: BucketCall): Promise<void> {
    await this.meet('delete', key, call);
    this.objects.delete(key);
  }

  /** The outputs' objects (not the results, the gallery, the marker). */
  outputKeys(): string[] {
    return [...this.objects.keys()].filter((k) => /\.(png|mp4)$/.test(k)).sort();
  }

  /** The copies' objects (web copies beside their outputs). */
  copyKeys(): string[] {
    return [...this.objects.keys()].filter((k) => /\.(webp|jpe?g|avif)$/.test(k)).sort();
  }

  private async meet(op: Op, key: string, call: BucketCall | undefined): Promise<void> {
    const f = this.fault(op, key);
    if (f === 'silent') {
      // Swallowed: the request stays unanswered until its caller gives it up.
      await new Promise<never>((_, reject) => {
        const signal = call?.signal;
        if (!signal) return;
        signal.addEventListener('abort', () => {
          this.abandoned++;
          reject(signal.reason);
        });
      });
    } else if (f) throw new BucketError(`${op} ${key}: ${f.code}`, f.fault, f.code);
  }
}

/** Patience for tests at a shrunken pace: a silent call is given up after 300 ms, the bucket after 20 s of faults. */
export const TEST_PATIENCE: Patience = { idleTimeoutMs: 300, unreachableMs: 20_000 };

/** A sink that publishes to `bucket` under `prefix`, staging beside the state. */
export function fakeBucketSink(
  bucket: FakeBucket,
  statePath: string,
  prefix = 'spring',
  patience: Patience = TEST_PATIENCE,
): BucketSink {
  return new BucketSink({ bucket: bucket.bucket, prefix }, bucket, new FolderSink(stagingDirFor(statePath)), {
    keepLocal: false,
    patience,
  });
}
