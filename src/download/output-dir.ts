import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileAtomic } from '../util/atomic-write.js';

/**
 * Creates the output dir and writes and removes a small file in it, so a dir
 * that cannot take outputs is found before anything is paid for. Returns the
 * problem (with the file system's code), or undefined when the dir is usable.
 */
export async function probeOutputDir(dir: string): Promise<{ code: string; message: string } | undefined> {
  const probe = join(dir, `.genbatch-probe-${randomBytes(4).toString('hex')}`);
  try {
    await mkdir(dir, { recursive: true });
    await writeFile(probe, 'genbatch checks that outputs can be written here\n', { flush: true });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'WRITE_FAILED';
    return { code, message: `cannot write to the output dir ${dir} (${code})` };
  } finally {
    await rm(probe, { force: true }).catch(() => undefined);
  }
  return undefined;
}

/** The file in an output dir that names the state whose outputs it holds. */
export const OWNER_FILE = '.genbatch-outputs.json';

/** Whose outputs a dir holds: a state file (by its path and run id), real or a rehearsal. */
export interface OutputDirOwner {
  state: string;
  runId: string;
  rehearsal: boolean;
}

/** The output dir holds another state's outputs: nothing is written there. */
export class OutputDirTakenError extends Error {
  override readonly name = 'OutputDirTakenError';
}

/**
 * Marks the output dir as this state's, or refuses it when it holds another
 * state's outputs (another manifest, or a rehearsal's outputs in a real run's
 * dir and the other way round), which this run would overwrite. The same run
 * from a moved or lost state file (same run id, the old file gone) takes it over.
 */
export async function claimOutputDir(dir: string, owner: OutputDirOwner): Promise<void> {
  const path = join(dir, OWNER_FILE);
  const current = await readFile(path, 'utf8').then(
    (text) => parseOwner(text),
    (error: NodeJS.ErrnoException) => (error.code === 'ENOENT' ? undefined : Promise.reject(error)),
  );
  if (current && !sameOwner(current, owner)) {
    const what = current.rehearsal
      ? `a rehearsal's outputs (--simulate, state ${current.state})`
      : `the outputs of the run whose state is ${current.state}`;
    const goOn = current.rehearsal === owner.rehearsal ? `, or --state ${current.state} to go on with that run` : '';
    throw new OutputDirTakenError(
      `${dir} holds ${what}; this run (state ${owner.state}${owner.rehearsal ? ', a rehearsal' : ''}) would overwrite them, so nothing was submitted. Pass another --out${goOn}. (${OWNER_FILE} in that dir names its owner.)`,
    );
  }
  if (!current || current.state !== owner.state)
    await writeFileAtomic(
      path,
      `${JSON.stringify({ ...owner, note: 'genbatch: the state whose outputs this dir holds' }, null, 2)}\n`,
    );
}

function parseOwner(text: string): OutputDirOwner | undefined {
  try {
    const v = JSON.parse(text) as Partial<OutputDirOwner>;
    if (typeof v.state === 'string' && typeof v.runId === 'string')
      return { state: v.state, runId: v.runId, rehearsal: v.rehearsal === true };
  } catch {
    // A marker cut short by a crash names no one: it is written anew.
  }
  return undefined;
}

function sameOwner(current: OutputDirOwner, owner: OutputDirOwner): boolean {
  if (current.rehearsal !== owner.rehearsal || current.runId !== owner.runId) return false;
  return current.state === owner.state || !existsSync(current.state);
}
