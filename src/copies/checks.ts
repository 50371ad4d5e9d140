import type { OutputChecks } from '../manifest/index.js';
import { sharpModule } from './web-copy.js';

/** Below this standard deviation in every channel (of 255), an image is flat: a blank frame, a uniform grey. */
const FLAT_STDEV = 2;
/** How far a size may be from the one expected. */
const SIZE_TOLERANCE = 0.02;

/**
 * What is wrong with an image output, by the manifest's checks: the reason
 * (said where a reviewer would read it), or undefined when it passes.
 */
export async function checkImage(image: Buffer, checks: OutputChecks): Promise<string | undefined> {
  const sharp = await sharpModule();
  const reasons: string[] = [];
  if (checks.size) {
    const { width = 0, height = 0 } = await sharp(image).metadata();
    const want = checks.size;
    const off = (got: number, expected: number) => Math.abs(got - expected) / expected > SIZE_TOLERANCE;
    if (off(width, want.width) || off(height, want.height))
      reasons.push(`size: ${width}x${height}, expected ${want.width}x${want.height} (within 2%)`);
  }
  if (checks.blank) {
    const { channels } = await sharp(image).stats();
    const colour = channels.slice(0, 3);
    const spread = Math.max(...colour.map((c) => c.stdev));
    if (spread < FLAT_STDEV)
      reasons.push(`blank: a flat image (no channel varies by more than ${spread.toFixed(1)} of 255)`);
  }
  return reasons.length ? `rejected by the manifest's checks: ${reasons.join('; ')}` : undefined;
}
