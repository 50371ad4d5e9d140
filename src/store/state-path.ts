import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Store } from './index.js';
import { EXIT, ExitError, usageError } from '../util/exit-error.js';

/** What names a manifest's state: the folder it is in, and its name. */
interface StateOwner {
  source: { dir: string };
  name: string;
}

/** `--state`, else `.genbatch/<manifest name>.sqlite` beside the manifest. */
export function statePathFor(manifest: StateOwner, flag: string | undefined, cwd: string, simulated = false): string {
  if (flag) return resolve(cwd, flag);
  return join(manifest.source.dir, '.genbatch', `${manifest.name}${simulated ? '.simulated' : ''}.sqlite`);
}

/** Where a command finds an existing state: the rehearsal's (`.simulated`) with --simulate, else the real one; missing, a usage error that says where else to look. */
export function existingStatePathFor(
  manifest: StateOwner,
  flags: { state?: string | undefined; simulate?: boolean | undefined },
  cwd: string,
): string {
  const rehearsal = Boolean(flags.simulate) && !flags.state;
  const path = statePathFor(manifest, flags.state, cwd, rehearsal);
  if (existsSync(path)) return path;
  const other = flags.state ? undefined : statePathFor(manifest, undefined, cwd, !rehearsal);
  const hint =
    other && existsSync(other)
      ? rehearsal
        ? ` (the real run's state is at ${other}: leave out --simulate)`
        : ` (a rehearsal's state is at ${other}: add --simulate to look at it)`
      : ' (genbatch run <manifest>), or pass --state PATH';
  throw usageError(`no state file at ${path}: nothing has run yet${hint}`);
}

/** A state opened for reading only; one that cannot be read is the environment's problem (exit 4). */
export function openStateReadOnly(path: string): Store {
  try {
    return Store.openReadOnly(path);
  } catch (error) {
    throw new ExitError(EXIT.environment, (error as Error).message, undefined, { cause: error });
  }
}
