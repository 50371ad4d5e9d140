import { join, resolve } from 'node:path';
import type { LoadedManifest } from '../manifest/index.js';

/** `--state`, else `.genbatch/<manifest name>.sqlite` beside the manifest. */
export function statePathFor(manifest: LoadedManifest, flag: string | undefined, cwd: string, simulated = false): string {
  if (flag) return resolve(cwd, flag);
  return join(manifest.source.dir, '.genbatch', `${manifest.name}${simulated ? '.simulated' : ''}.sqlite`);
}
