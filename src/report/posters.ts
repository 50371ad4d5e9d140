import { readFile, stat } from 'node:fs/promises';
import type { ItemSpec } from '../manifest/index.js';
import { escapeHtml, relativeUrl } from './html.js';
import type { ResultRow } from './results.js';

/** Inputs larger than this are not inlined into the gallery as posters. */
const MAX_INLINE_POSTER_BYTES = 1024 * 1024;

/** What posters are drawn from: items' specs and first outputs, looked up one at a time (the state, or rows in hand). */
export interface PosterSource {
  specOf(id: string): ItemSpec | undefined;
  /** The item's first verified output, relative to the output dir. */
  firstFileOf(id: string): string | undefined;
}

/** Inputs already read for a poster, by path: shared across pages so a start image used by many videos is read once. */
export type InlinedPosters = Map<string, Promise<string | undefined>>;

/**
 * A poster for each video: the image the video started from when there is one
 * (an earlier item's output by relative path, a local input inlined), else a
 * drawn placeholder. Extracting a frame would need a video decoder we do not ship.
 */
export async function postersFor(
  rows: readonly ResultRow[],
  items: PosterSource,
  inlined: InlinedPosters = new Map(),
): Promise<Map<string, string>> {
  const posters = new Map<string, string>();

  const startImage = async (id: string, depth: number): Promise<string | undefined> => {
    const spec = items.specOf(id);
    if (!spec || depth > 16) return undefined;
    if (spec.image?.kind === 'item') {
      const from = items.firstFileOf(spec.image.id);
      return from ? relativeUrl(from) : undefined;
    }
    if (spec.image?.kind === 'file') {
      const path = spec.image.path;
      if (!inlined.has(path)) inlined.set(path, inline(path));
      return inlined.get(path);
    }
    // An extension starts where its source video did.
    return spec.source ? startImage(spec.source, depth + 1) : undefined;
  };

  for (const row of rows) {
    if (row.type !== 'video') continue;
    posters.set(row.id, (await startImage(row.id, 0)) ?? placeholderPoster(row.model, items.specOf(row.id)?.duration));
  }
  return posters;
}

async function inline(path: string): Promise<string | undefined> {
  try {
    if ((await stat(path)).size > MAX_INLINE_POSTER_BYTES) return undefined;
    // Only a video started from a local file needs mime-types: not loaded for every report (it builds its whole table when imported).
    const type = (await import('mime-types')).lookup(path);
    if (type === false || !type.startsWith('image/')) return undefined;
    return `data:${type};base64,${(await readFile(path)).toString('base64')}`;
  } catch {
    return undefined; // the input moved since: the placeholder will do
  }
}

function placeholderPoster(model: string, duration: string | undefined): string {
  const label = escapeHtml(`${model}${duration ? ` · ${duration} s` : ''}`);
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="320" height="180" viewBox="0 0 320 180"><rect width="320" height="180" fill="#1f2933"/><circle cx="160" cy="80" r="34" fill="#ffffff22"/><path d="M149 62v36l30-18z" fill="#fff"/><text x="160" y="150" fill="#cbd2d9" font-family="sans-serif" font-size="14" text-anchor="middle">${label}</text></svg>`;
  return `data:image/svg+xml,${encodeURIComponent(svg)}`;
}
