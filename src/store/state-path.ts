import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Store } from './index.js';
import { madeAgainst, serviceName } from './made-against.js';
import { EXIT, ExitError, usageError } from '../util/exit-error.js';

/** What names a manifest's state: the folder it is in, and its name. */
interface StateOwner {
  source: { dir: string };
  name: string;
}

/**
 * Which run a state is for: a real run's, a trial's (a run against a service that says it is a simulator, such as
 * `genbatch simulate`: kept and resumed like a real run), or a rehearsal's (`--simulate`, in-process, started over
 * each time). Each has places of its own, so none ever touches another's.
 */
export type StateKind = 'real' | 'trial' | 'rehearsal';

/** The suffix of a kind's places: the state `.genbatch/<name><suffix>.sqlite`, the outputs `<out dir><suffix>`. */
export const PLACE_SUFFIX: Record<StateKind, string> = { real: '', trial: '.simulated', rehearsal: '.rehearsal' };

/**
 * How a command names a state: by path (`--state`), a rehearsal's (`--simulate`), or the one `run` takes in this
 * environment, whose service is `baseUrl` (GENBATCH_BASE_URL).
 */
export interface StateFlags {
  state?: string | undefined;
  simulate?: boolean | undefined;
  baseUrl?: string | undefined;
}

/** `--state`, else `.genbatch/<manifest name><suffix>.sqlite` beside the manifest. */
export function statePathFor(
  manifest: StateOwner,
  flag: string | undefined,
  cwd: string,
  kind: StateKind = 'real',
): string {
  if (flag) return resolve(cwd, flag);
  return join(manifest.source.dir, '.genbatch', `${manifest.name}${PLACE_SUFFIX[kind]}.sqlite`);
}

/**
 * The kind of state a command means without --state: the rehearsal's with --simulate; else the one `run` would take
 * in this environment. Asked without the network: the trial's when the environment's service (GENBATCH_BASE_URL) is
 * the simulator the trial's state was made against, or when the trial's is the only state there.
 */
export function kindMeant(manifest: StateOwner, flags: StateFlags, cwd: string): StateKind {
  if (flags.simulate) return 'rehearsal';
  const trial = statePathFor(manifest, undefined, cwd, 'trial');
  if (!existsSync(trial)) return 'real';
  if (!existsSync(statePathFor(manifest, undefined, cwd, 'real'))) return 'trial';
  return madeAgainstService(trial) === serviceName(flags.baseUrl) ? 'trial' : 'real';
}

/** The service a state recorded it was made against, or undefined. */
function madeAgainstService(path: string): string | undefined {
  try {
    const store = Store.openReadOnly(path);
    try {
      const made = madeAgainst(store);
      return made?.how === 'recorded' ? made.service : undefined;
    } finally {
      store.close();
    }
  } catch {
    return undefined;
  }
}

const HOW_TO_REACH: Record<StateKind, string> = {
  real: "the real run's state is at PATH: leave out --simulate, and run against the service",
  trial:
    "a trial's state (a run against a simulator) is at PATH: leave out --simulate, with GENBATCH_BASE_URL set to that simulator",
  rehearsal: "a rehearsal's state is at PATH: add --simulate to look at it",
};

/** Where a command looks for a state, whether it is there, and where else one is. */
export function lookForState(
  manifest: StateOwner,
  flags: StateFlags,
  cwd: string,
): { path: string; found: boolean; kind: StateKind; elsewhere?: string } {
  const kind = kindMeant(manifest, flags, cwd);
  const path = statePathFor(manifest, flags.state, cwd, kind);
  if (existsSync(path)) return { path, found: true, kind };
  if (flags.state) return { path, found: false, kind };
  for (const other of ['real', 'trial', 'rehearsal'] as const) {
    const there = statePathFor(manifest, undefined, cwd, other);
    if (other !== kind && existsSync(there))
      return { path, found: false, kind, elsewhere: HOW_TO_REACH[other].replace('PATH', there) };
  }
  return { path, found: false, kind };
}

/** Where a command finds an existing state; missing, a usage error that says where else to look. */
export function existingStatePathFor(manifest: StateOwner, flags: StateFlags, cwd: string): string {
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
