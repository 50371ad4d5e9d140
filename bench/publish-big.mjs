// Child of the publish bench, run with rss-probe.mjs preloaded (the parent reads its peak RSS). `videos`: four 150 MB
// videos published at once, as a run's publisher does (four at a time); `images N`: a backlog of N small images
// published four at a time. Prints {seconds, bytes, objects}.
import { createHash } from 'node:crypto';
import { appendFileSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_PATIENCE } from '../dist/options/flags.js';
import { BucketSink, FolderSink } from '../dist/sink/index.js';
import { S3BucketClient } from '../dist/sink/bucket/s3-bucket-client.js';

const AT_ONCE = 4;
const staging = mkdtempSync(join(tmpdir(), 'genbatch-bench-big-'));
mkdirSync(staging, { recursive: true });

/** A staged file of `mb` MiB (or `bytes`), made of chunks that differ: its description as a saved output. */
function stage(path, chunks, chunkBytes, contentType) {
  const chunk = Buffer.alloc(chunkBytes);
  const hash = createHash('sha256');
  writeFileSync(join(staging, path), '');
  for (let i = 0; i < chunks; i++) {
    chunk.fill(i & 0xff);
    chunk.write(path, 0);
    appendFileSync(join(staging, path), chunk);
    hash.update(chunk);
  }
  return { path, bytes: chunks * chunkBytes, sha256: hash.digest('hex'), contentType };
}

const [mode, count] = process.argv.slice(2);
const outputs =
  mode === 'videos'
    ? Array.from({ length: AT_ONCE }, (_, v) => stage(`spin-${v}-${process.pid}.mp4`, 150, 1024 * 1024, 'video/mp4'))
    : Array.from({ length: Number(count) }, (_, i) => stage(`p${i}-${process.pid}.png`, 1, 48 * 1024, 'image/png'));
const store = new S3BucketClient({ bucket: 'catalog', idleTimeoutMs: 30_000 });
const sink = new BucketSink({ bucket: 'catalog', prefix: 'bench' }, store, new FolderSink(staging), {
  keepLocal: false,
  patience: DEFAULT_PATIENCE,
});
const started = performance.now();
const queue = [...outputs];
await Promise.all(
  Array.from({ length: AT_ONCE }, async () => {
    for (let o = queue.shift(); o; o = queue.shift()) await sink.publishing.publish(o);
  }),
);
const bytes = outputs.reduce((n, o) => n + o.bytes, 0);
console.log(JSON.stringify({ seconds: (performance.now() - started) / 1000, bytes, objects: outputs.length }));
