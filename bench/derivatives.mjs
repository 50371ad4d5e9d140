// Web copies of image outputs (derivatives) made with sharp, as a run makes them: 1,000 PNGs of 2048x2560 into a
// WebP 1600w and a JPEG 800w each, marked as AI-made, two originals at a time.
// Goal: a run at the real pace of 5 keys (50 images a minute) is kept up with by a wide margin (at least 5x).
// Peak RSS is reported: the four originals are made in the same process, and glibc's arenas hold what libvips
// frees (MALLOC_ARENA_MAX=2 lowers it by a fifth).
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fmt, root } from './measure.mjs';

const IMAGES = 1_000;
const GOAL = { perMinute: 50, margin: 5 };

export async function derivativesBench() {
  const rssFile = join(mkdtempSync(join(tmpdir(), 'genbatch-bench-')), 'rss');
  const child = spawn(
    process.execPath,
    ['--import', join(root, 'bench', 'rss-probe.mjs'), join(root, 'bench', 'derivatives-child.mjs'), String(IMAGES)],
    { env: { ...process.env, BENCH_RSS_FILE: rssFile }, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  const code = await new Promise((resolve) => child.on('close', resolve));
  if (code !== 0 || !existsSync(rssFile)) throw new Error(`bench/derivatives-child.mjs exited ${code}: ${out}`);
  const r = JSON.parse(out);
  const rssMb = JSON.parse(readFileSync(rssFile, 'utf8')).maxRss / 1024 / 1024;
  const perMinute = (r.images / r.seconds) * 60;
  const pass = perMinute >= GOAL.perMinute * GOAL.margin;
  console.log(
    `derivatives of ${r.images} PNGs of 2048x2560 (${fmt(r.originalBytes / 1024 / 1024, 1)} MB each) into WebP 1600w + JPEG 800w, ` +
      `two at a time: ${fmt(r.seconds, 1)} s, ${fmt(r.cpuMsPerImage, 0)} CPU-ms per image, ${fmt(perMinute, 0)} images a minute ` +
      `(${fmt(perMinute / GOAL.perMinute, 1)}x the 50 a minute of 5 keys at the real pace; goal >= ${GOAL.margin}x); ` +
      `${fmt(r.bytesOut / r.images / 1024, 0)} KB of copies per image; peak RSS ${fmt(rssMb, 0)} MB: ${pass ? 'met' : 'MISSED'}`,
  );
  return pass;
}
