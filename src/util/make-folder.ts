import { mkdirSync, statSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';

/**
 * `mkdir -p`, one level at a time. Node's own recursive mkdir loops for good
 * where a file system says a folder is missing and then that it exists
 * (procfs: `--out /proc/x` spun a core at 88% with nothing said): here the
 * first missing level is made once, and its error is the answer.
 */
export async function makeFolder(path: string): Promise<void> {
  for (const dir of missingLevels(path)) await mkdir(dir).catch(existing);
}

/** The same, for the few places that must be synchronous (the state's folder, before the state opens). */
export function makeFolderSync(path: string): void {
  for (const dir of missingLevels(path)) {
    try {
      mkdirSync(dir);
    } catch (error) {
      existing(error);
    }
  }
}

/** The levels of `path` that do not exist yet, outermost first (a few stats, up to the first that exists). */
function missingLevels(path: string): string[] {
  const missing: string[] = [];
  for (let at = resolve(path); ; ) {
    const found = statSync(at, { throwIfNoEntry: false });
    if (found) {
      if (!found.isDirectory()) throw notAFolder(at);
      break;
    }
    missing.push(at);
    const up = dirname(at);
    if (up === at) break;
    at = up;
  }
  return missing.reverse();
}

/** Another process made it meanwhile: that is what was wanted. */
function existing(error: unknown): void {
  if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
}

function notAFolder(path: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`ENOTDIR: not a directory, mkdir '${path}'`), { code: 'ENOTDIR', path });
}
