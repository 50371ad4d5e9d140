// Child of the derivatives bench (rss-probe.mjs preloaded): makes a WebP 1600w and a JPEG 800w of IMAGES
// 2048x2560 PNGs, two originals at a time as a run's copier does, each marked as AI-made. Prints its figures.
import sharp from 'sharp';
import { copiesOf } from '../dist/copies/web-copy.js';

const IMAGES = Number(process.argv[2] ?? 1000);
const AT_ONCE = 2;
const COPIES = [
  { format: 'webp', width: 1600 },
  { format: 'jpeg', width: 800 },
];

// Four photo-like originals (a gradient under noise, as a product shot's PNG compresses): decoding dominates, as it would.
const originals = [];
for (let i = 0; i < 4; i++) {
  const noise = await sharp({
    create: { width: 2048, height: 2560, channels: 3, noise: { type: 'gaussian', mean: 100 + i * 20, sigma: 12 } },
  })
    .png()
    .toBuffer();
  originals.push(noise);
}
const cpuBefore = process.cpuUsage();
const started = performance.now();
let next = 0;
let bytesOut = 0;
await Promise.all(
  Array.from({ length: AT_ONCE }, async () => {
    for (let i = next++; i < IMAGES; i = next++) {
      const original = originals[i % originals.length];
      const mark = { model: 'studio-xl', jobId: `job-${i}`, itemId: `item-${i}` };
      for await (const copy of copiesOf(original, COPIES, mark)) bytesOut += copy.data.length;
    }
  }),
);
const cpu = process.cpuUsage(cpuBefore);
console.log(
  JSON.stringify({
    images: IMAGES,
    seconds: (performance.now() - started) / 1000,
    cpuMsPerImage: (cpu.user + cpu.system) / 1000 / IMAGES,
    originalBytes: originals[0].length,
    bytesOut,
  }),
);
