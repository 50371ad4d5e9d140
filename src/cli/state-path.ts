import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { LoadedManifest } from '../manifest/index.js';

/** `--state`, else `.genbatch/<manifest name>.sqlite` beside the manifest. */
export function statePathFor(manifest: LoadedManifest, flag: string | undefined, cwd: string, simulated = false): string {
  if (flag) return resolve(cwd, flag);
  return join(manifest.source.dir, '.genbatch', `${manifest.name}${simulated ? '.simulated' : ''}.sqlite`);
}

/** For commands that read a state: the default one, or after a rehearsal (run --simulate) the one there is. */
export function existingStatePathFor(manifest: LoadedManifest, flag: string | undefined, cwd: string): string {
  const path = statePathFor(manifest, flag, cwd);
  const rehearsal = statePathFor(manifest, undefined, cwd, true);
  return !flag && !existsSync(path) && existsSync(rehearsal) ? rehearsal : path;
}
