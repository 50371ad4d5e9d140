import type { Derivative } from '../manifest/index.js';
import { aiMarkXmp, type MarkFacts } from './xmp.js';

/** A copy as made: its bytes and what they are. */
export interface MadeCopy {
  data: Buffer;
  format: Derivative['format'];
  width: number;
  height: number;
}

type Sharp = typeof import('sharp').default;
let loaded: Promise<Sharp> | undefined;

/** sharp is loaded by the first copy made: a run without derivatives never loads libvips. */
export function sharpModule(): Promise<Sharp> {
  loaded ??= import('sharp').then((m) => {
    const sharp = m.default;
    // One image at a time per copy: the run bounds how many copies are made at once.
    sharp.concurrency(1);
    sharp.cache(false);
    return sharp;
  });
  return loaded;
}

/**
 * One web copy of an image: turned upright, fitted inside the size asked
 * (the ratio kept, never enlarged unless asked), in sRGB, in the format
 * asked, with no metadata of the original's but, unless `mark` is undefined,
 * XMP that marks it as AI-made. The original's bytes are only read.
 */
export async function makeCopy(original: Buffer, d: Derivative, mark: MarkFacts | undefined): Promise<MadeCopy> {
  const sharp = await sharpModule();
  let image = sharp(original, { failOn: 'error' }).rotate();
  if (d.width || d.height)
    image = image.resize({
      ...(d.width ? { width: d.width } : {}),
      ...(d.height ? { height: d.height } : {}),
      fit: 'inside',
      withoutEnlargement: !d.enlarge,
    });
  image = image.toColourspace('srgb');
  if (mark) image = image.withXmp(aiMarkXmp(mark));
  const q = d.quality === undefined ? {} : { quality: d.quality };
  if (d.format === 'webp') image = image.webp(q);
  else if (d.format === 'jpeg') image = image.jpeg({ ...q, mozjpeg: true });
  else if (d.format === 'avif') image = image.avif(q);
  else image = image.png();
  const { data, info } = await image.toBuffer({ resolveWithObject: true });
  return { data, format: d.format, width: info.width, height: info.height };
}

/** The XMP a copy carries, as text (for checks and tests): undefined when it has none. */
export async function xmpOf(image: Buffer): Promise<string | undefined> {
  const sharp = await sharpModule();
  const meta = await sharp(image).metadata();
  return meta.xmpAsString ?? meta.xmp?.toString('utf8');
}
