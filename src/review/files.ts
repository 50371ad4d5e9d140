import { createReadStream } from 'node:fs';
import { realpath, stat } from 'node:fs/promises';
import type { ServerResponse } from 'node:http';
import { sep } from 'node:path';
import mime from 'mime-types';
import { resolveInside } from '../manifest/output-paths.js';

/**
 * Serves one output file, named relative to the output dir. Anything that is
 * not a recorded output, or resolves (through `..` or a link) outside the
 * dir, is a 404: nothing else on disk can be reached through the server.
 */
export async function serveOutput(
  res: ServerResponse,
  outDir: string,
  relative: string,
  isOutput: (path: string) => boolean,
): Promise<void> {
  const path = await insideOutDir(outDir, relative, isOutput);
  const size = path
    ? await stat(path).then(
        (s) => (s.isFile() ? s.size : undefined),
        () => undefined,
      )
    : undefined;
  if (!path || size === undefined) {
    res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('not found');
    return;
  }
  res.writeHead(200, {
    'content-type': mime.lookup(path) || 'application/octet-stream',
    'content-length': size,
    // A path never changes its bytes: paid outputs are never overwritten (a regeneration is a new version).
    'cache-control': 'private, max-age=86400, immutable',
  });
  createReadStream(path)
    .on('error', () => res.destroy())
    .pipe(res);
}

async function insideOutDir(
  outDir: string,
  relative: string,
  isOutput: (path: string) => boolean,
): Promise<string | undefined> {
  if (!isOutput(relative)) return undefined;
  let path: string;
  try {
    path = resolveInside(outDir, relative);
  } catch {
    return undefined;
  }
  const [real, root] = await Promise.all([realpath(path).catch(() => undefined), realpath(outDir).catch(() => outDir)]);
  return real?.startsWith(root + sep) ? real : undefined;
}
