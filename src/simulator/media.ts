import { createHash } from 'node:crypto';
import { crc32, deflateSync } from 'node:zlib';
import { BASE_CLIP_MP4_BASE64 } from './clip-mp4.js';

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const BASE_CLIP = Buffer.from(BASE_CLIP_MP4_BASE64, 'base64');

function pngChunk(type: string, data: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(data.length, 0);
  head.write(type, 4, 'ascii');
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])) >>> 0, 0);
  return Buffer.concat([head, data, crc]);
}

/**
 * A valid PNG whose colours and embedded text derive from `seed`, so every
 * job's output is different bytes (the runner's hashes must tell them apart).
 */
export function makePng(seed: string, width = 192, height = 192, flat = false): Buffer {
  const h = createHash('sha256').update(seed).digest();
  // A flat image: one grey everywhere (what a broken generation looks like).
  if (flat) h.fill(128, 0, 7);
  const [r1, g1, b1, r2, g2, b2] = [h[0]!, h[1]!, h[2]!, h[3]!, h[4]!, h[5]!];
  const stripe = 8 + (h[6]! % 24);
  const raw = Buffer.alloc((width * 3 + 1) * height);
  let o = 0;
  for (let y = 0; y < height; y++) {
    raw[o++] = 0; // filter: none
    for (let x = 0; x < width; x++) {
      const t = (x + y) / (width + height);
      const band = flat || Math.floor((x + 2 * y) / stripe) % 2 === 0 ? 1 : 0.85;
      raw[o++] = Math.round((r1 * (1 - t) + r2 * t) * band);
      raw[o++] = Math.round((g1 * (1 - t) + g2 * t) * band);
      raw[o++] = Math.round((b1 * (1 - t) + b2 * t) * band);
    }
  }
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // colour type: RGB
  const text = Buffer.from(`Comment\0genbatch simulator output ${seed}`, 'latin1');
  return Buffer.concat([
    PNG_SIGNATURE,
    pngChunk('IHDR', ihdr),
    pngChunk('tEXt', text),
    pngChunk('IDAT', deflateSync(raw)),
    pngChunk('IEND', Buffer.alloc(0)),
  ]);
}

/**
 * A valid MP4: the base clip followed by a top-level `free` box naming `seed`.
 * Players skip `free` boxes, so the clip still plays while its bytes are unique.
 */
export function makeMp4(seed: string): Buffer {
  const payload = Buffer.from(`genbatch simulator output ${seed}`, 'utf8');
  const box = Buffer.alloc(8);
  box.writeUInt32BE(8 + payload.length, 0);
  box.write('free', 4, 'ascii');
  return Buffer.concat([BASE_CLIP, box, payload]);
}
