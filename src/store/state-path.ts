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

/** Where a command looks for a state: the rehearsal's (`.simulated`) with --simulate, else the real one; whether it is there, and where else to look. */
export function lookForState(
  manifest: StateOwner,
  flags: { state?: string | undefined; simulate?: boolean | undefined },
  cwd: string,
): { path: string; found: boolean; elsewhere?: string } {
  const rehearsal = Boolean(flags.simulate) && !flags.state;
  const path = statePathFor(manifest, flags.state, cwd, rehearsal);
  if (existsSync(path)) return { path, found: true };
  const other = flags.state ? undefined : statePathFor(manifest, undefined, cwd, !rehearsal);
  if (!other || !existsSync(other)) return { path, found: false };
  const elsewhere = rehearsal
    ? `the real run's state is at ${other}: leave out --simulate`
    : `a rehearsal's state is at ${other}: add --simulate to look at it`;
  return { path, found: false, elsewhere };
}

/** Where a command finds an existing state; missing, a usage error that says where else to look. */
export function existingStatePathFor(
  manifest: StateOwner,
  flags: { state?: string | undefined; simulate?: boolean | undefined },
  cwd: string,
): string {
  const { path, found, elsewhere } = lookForState(manifest, flags, cwd);
  if (found) return path;
  const hint = elsewhere ? ` (${elsewhere})` : ' (genbatch run <manifest>), or pass --state PATH';
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
