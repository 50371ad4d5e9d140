import { openSync, readFileSync, rmSync, writeSync, closeSync } from 'node:fs';
import { processAlive as alive } from '../util/process-alive.js';
import { hostname } from 'node:os';
import { StateFileError } from './db.js';

/**
 * One process per state file. The lock file names its holder; a holder that
 * died (killed with SIGKILL, say) is detected and its lock taken over.
 */
export function acquireLock(statePath: string): () => void {
  const lockPath = `${statePath}.lock`;
  const me = `${process.pid}@${hostname()}`;
  for (let tries = 0; tries < 2; tries++) {
    try {
      const fd = openSync(lockPath, 'wx');
      writeSync(fd, me);
      closeSync(fd);
      return () => rmSync(lockPath, { force: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') {
        throw new StateFileError(
          `cannot lock the state file (${lockPath}): ${(error as NodeJS.ErrnoException).code}. Is its directory writable?`,
        );
      }
      let holder = '';
      try {
        holder = readFileSync(lockPath, 'utf8');
      } catch {
        continue; // released meanwhile
      }
      const [pid, host] = holder.split('@');
      if (host === hostname() && pid && !alive(Number(pid))) {
        rmSync(lockPath, { force: true }); // its holder died: take over
        continue;
      }
      throw new StateFileError(
        `another genbatch process (${holder}) is running on this state file (${statePath}). Wait for it to finish, or stop it first.`,
      );
    }
  }
  throw new StateFileError(`cannot lock the state file ${statePath}`);
}

/** Whether a live process on this host holds the state file's lock: a run is under way. */
export function lockHolder(statePath: string): { pid: number; alive: boolean } | undefined {
  let holder: string;
  try {
    holder = readFileSync(`${statePath}.lock`, 'utf8');
  } catch {
    return undefined;
  }
  const [pid, host] = holder.split('@');
  const n = Number(pid);
  if (!Number.isInteger(n) || n <= 0) return undefined;
  // A holder on another host cannot be checked from here: take its word.
  return { pid: n, alive: host !== hostname() || alive(n) };
}
