import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import {
  OutputExistsError,
  type ByteRange,
  type OutputCheck,
  type OutputSink,
  type OutputsOwner,
  type RecordedOutput,
  type SinkWriter,
} from '../../src/sink/index.js';

/** A sink that keeps its files in memory: what a run writes through the seam, with no folder behind it. */
export class MemorySink implements OutputSink {
  readonly location = 'memory://outputs';
  readonly files = new Map<string, { bytes: Buffer; mtimeMs: number }>();
  marker: string | undefined;
  private clock = 1_000;

  async probe() {
    return undefined;
  }

  /** The run that claimed the place, as its marker names it. */
  get owner(): OutputsOwner | undefined {
    return this.marker === undefined ? undefined : (JSON.parse(this.marker) as OutputsOwner);
  }

  async readMarker(): Promise<string | undefined> {
    return this.marker;
  }

  async writeMarker(text: string): Promise<void> {
    this.marker = text;
  }

  async create(relPath: string, mode: 'new' | 'replace'): Promise<SinkWriter> {
    const chunks: Buffer[] = [];
    const files = this.files;
    return {
      location: `${this.location}/${relPath}`,
      async write(data) {
        if (typeof data === 'string') chunks.push(Buffer.from(data));
        else if (data instanceof Uint8Array) chunks.push(Buffer.from(data));
        else for (const c of data) chunks.push(Buffer.from(c));
      },
      commit: async (expected) => {
        const bytes = Buffer.concat(chunks);
        const there = files.get(relPath);
        if (mode === 'new' && there && !there.bytes.equals(bytes)) throw new OutputExistsError(`${relPath} is taken`);
        if (expected && createHash('sha256').update(bytes).digest('hex') !== expected.sha256)
          throw new Error('not the bytes counted');
        const mtimeMs = this.clock++;
        files.set(relPath, { bytes, mtimeMs });
        return mtimeMs;
      },
      async abort() {},
    };
  }

  async check(out: RecordedOutput): Promise<OutputCheck> {
    const file = this.files.get(out.path);
    if (!file) return { verdict: 'missing' };
    if (file.bytes.length !== out.bytes) return { verdict: 'resized' };
    if (file.mtimeMs === out.mtime_ms) return { verdict: 'unchanged' };
    const same = createHash('sha256').update(file.bytes).digest('hex') === out.sha256;
    return same ? { verdict: 'same-bytes', mtimeMs: file.mtimeMs } : { verdict: 'altered' };
  }

  async open(relPath: string) {
    const file = this.files.get(relPath);
    if (!file) return undefined;
    return {
      size: file.bytes.length,
      read: (range?: ByteRange) =>
        Readable.from([range ? file.bytes.subarray(range.start, range.end + 1) : file.bytes]),
    };
  }

  async localFile(): Promise<undefined> {
    return undefined;
  }

  async cleanUp(): Promise<void> {}

  async close(): Promise<void> {}
}
