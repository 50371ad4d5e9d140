import type { ServerResponse } from 'node:http';
import mime from 'mime-types';
import type { OutputSink } from '../sink/index.js';

/**
 * Serves one output file, named relative to where the outputs are. Anything
 * that is not a recorded output, or that the sink does not hold inside its
 * place (`..`, a link out of the folder), is a 404: nothing else can be
 * reached through the server.
 */
export async function serveOutput(
  res: ServerResponse,
  outputs: OutputSink,
  relative: string,
  isOutput: (path: string) => boolean,
  range?: string,
): Promise<void> {
  const file = isOutput(relative) ? await outputs.open(relative) : undefined;
  if (!file) {
    res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('not found');
    return;
  }
  const { size } = file;
  const headers = {
    'content-type': mime.lookup(relative) || 'application/octet-stream',
    'accept-ranges': 'bytes',
    // A path never changes its bytes: paid outputs are never overwritten (a regeneration is a new version).
    'cache-control': 'private, max-age=86400, immutable',
  };
  // A video is scrubbed by ranges: one range is served; anything else gets the whole file.
  const part = range === undefined ? undefined : byteRange(range, size);
  if (part === 'unsatisfiable') {
    res.writeHead(416, { 'content-range': `bytes */${size}` }).end();
    return;
  }
  if (part)
    res.writeHead(206, {
      ...headers,
      'content-length': part.end - part.start + 1,
      'content-range': `bytes ${part.start}-${part.end}/${size}`,
    });
  else res.writeHead(200, { ...headers, 'content-length': size });
  file
    .read(part)
    .on('error', () => res.destroy())
    .pipe(res);
}

/** One `bytes=a-b`, `bytes=a-` or `bytes=-n` range within `size`; undefined for what is not one range (the whole file is sent). */
function byteRange(header: string, size: number): { start: number; end: number } | 'unsatisfiable' | undefined {
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === '' && m[2] === '')) return undefined;
  const start = m[1] === '' ? Math.max(0, size - Number(m[2])) : Number(m[1]);
  const end = m[1] === '' || m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
  return start > end || start >= size ? 'unsatisfiable' : { start, end };
}
