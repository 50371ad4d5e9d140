import { webCopySuffix } from './output-paths.js';
import type { Manifest, ManifestItem } from './schema.js';
import type { CopyPlan, OutputChecks } from './types.js';

// What becomes of an image's outputs once verified: web copies (derivatives), their AI marking, the checks.

type Merged = Omit<ManifestItem, 'matrix' | 'rows' | 'repeat'>;

/** The finishing given at the manifest's top level: under `defaults`, which is under the item's own. */
export function topCopyPlanOf(manifest: Manifest): Pick<Merged, 'derivatives' | 'mark' | 'checks'> {
  const { derivatives, mark, checks } = manifest;
  return {
    ...(derivatives ? { derivatives } : {}),
    ...(mark !== undefined ? { mark } : {}),
    ...(checks ? { checks } : {}),
  };
}

/** Web copies are made of images: a video written with them is a mistake (genbatch assumes no ffmpeg); no two copies share a name. */
export function checkCopyPlan(
  own: ManifestItem,
  merged: Merged,
  type: 'image' | 'video',
  fail: (field: string, message: string) => void,
): void {
  for (const field of ['derivatives', 'checks'] as const)
    if (type === 'video' && own[field] !== undefined)
      fail(field, `${field} apply only to image outputs; a video item cannot have them (no ffmpeg is assumed)`);
  const twice = sameNamedCopy(merged.derivatives);
  if (twice) fail('derivatives', `two derivatives would both be named *.${twice}: give each its own size or format`);
}

/** An image's finishing, merged from the top level, defaults and the item; none for a video or without derivatives. */
export function copyPlanOf(merged: Merged, type: 'image' | 'video'): CopyPlan | undefined {
  const checks = checksOf(merged.checks);
  if (type !== 'image' || (!merged.derivatives && !checks)) return undefined;
  return { derivatives: merged.derivatives ?? [], mark: merged.mark ?? true, ...(checks ? { checks } : {}) };
}

function checksOf(checks: Merged['checks']): OutputChecks | undefined {
  if (!checks?.blank && !checks?.size) return undefined;
  const [width, height] = (checks.size ?? '').split('x').map(Number);
  return { ...(checks.blank ? { blank: true } : {}), ...(width && height ? { size: { width, height } } : {}) };
}

/** The name two derivatives would share (`1600w.webp`), if any. */
function sameNamedCopy(derivatives: Merged['derivatives']): string | undefined {
  const seen = new Set<string>();
  for (const d of derivatives ?? []) {
    const suffix = webCopySuffix(d);
    if (seen.has(suffix)) return suffix;
    seen.add(suffix);
  }
  return undefined;
}
