import type { ServerResponse } from 'node:http';
import type { GridThumbnails } from '../copies/thumbs/grid.js';
import type { OutputSink } from '../sink/index.js';
import { serveOutput } from './files.js';

/** The thumbnail of a recorded image output; anything it cannot make one of is served as the output itself. */
export async function serveThumbnail(
  res: ServerResponse,
  thumbs: GridThumbnails,
  outputs: OutputSink,
  relative: string,
  known: (path: string) => boolean,
): Promise<void> {
  if (!known(relative)) return serveOutput(res, outputs, relative, () => false);
  const thumb = await thumbs.thumbOf(relative);
  if (!thumb) return serveOutput(res, outputs, relative, known);
  res
    .writeHead(200, {
      'content-type': 'image/webp',
      'content-length': thumb.length,
      // An output's bytes never change (a regeneration is a new version, at a new path): nor does its thumbnail.
      'cache-control': 'private, max-age=86400, immutable',
    })
    .end(thumb);
}
