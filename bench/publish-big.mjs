// Child of the publish bench: publishes three 150 MB videos from a staging folder at once, as a run's publisher does.
// Prints {seconds, bytes}; the parent preloads rss-probe.mjs to read its peak RSS.
import { createHash } from 'node:crypto';
import { appendFileSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BucketSink, FolderSink } from '../dist/sink/index.js';
import { S3ObjectStore } from '../dist/sink/bucket/s3-store.js';

const SIZE_MB = 150;
const staging = mkdtempSync(join(tmpdir(), 'genbatch-bench-big-'));
mkdirSync(staging, { recursive: true });
const chunk = Buffer.alloc(1024 * 1024);
const outputs = [];
for (let v = 0; v < 3; v++) {
  const path = `spin-${v}-${process.pid}.mp4`;
  writeFileSync(join(staging, path), '');
  const hash = createHash('sha256');
  for (let i = 0; i < SIZE_MB; i++) {
    chunk.fill((v * 7 + i) & 0xff);
    appendFileSync(join(staging, path), chunk);
    hash.update(chunk);
  }
  outputs.push({ path, bytes: SIZE_MB * 1024 * 1024, sha256: hash.digest('hex'), contentType: 'video/mp4' });
}
const store = new S3ObjectStore({ bucket: 'catalog', idleMs: 30_000 });
const sink = new BucketSink({ bucket: 'catalog', prefix: 'big' }, store, new FolderSink(staging), { keepLocal: false });
const started = performance.now();
await Promise.all(outputs.map((o) => sink.publishing.publish(o)));
console.log(JSON.stringify({ seconds: (performance.now() - started) / 1000, bytes: 3 * SIZE_MB * 1024 * 1024 }));
