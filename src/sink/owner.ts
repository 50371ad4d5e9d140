import { GenbatchError } from '../util/errors.js';
import type { OutputsOwner } from './sink.js';

/** The file, at the top of a place that holds outputs, that names the state whose outputs they are. */
export const OWNER_FILE = '.genbatch-outputs.json';

/** The place holds another state's outputs: nothing is written there. */
export class OutputsTakenError extends GenbatchError {}

/** The marker's text, as written. */
export function ownerText(owner: OutputsOwner): string {
  return `${JSON.stringify({ ...owner, note: 'genbatch: the state whose outputs this dir holds' }, null, 2)}\n`;
}

/** The owner a marker names; none when it names no one (a marker cut short by a crash is written anew). */
export function parseOwner(text: string): OutputsOwner | undefined {
  try {
    const v = JSON.parse(text) as Partial<OutputsOwner>;
    if (typeof v.state === 'string' && typeof v.runId === 'string')
      return { state: v.state, runId: v.runId, rehearsal: v.rehearsal === true };
  } catch {
    // A marker cut short by a crash names no one.
  }
  return undefined;
}

/**
 * Whether `owner` may write where `current` is recorded: the same state, or
 * the same run from a moved or lost state file (`stateExists` says whether
 * the recorded state is still there). Refused with what to do otherwise:
 * another manifest's outputs, or a rehearsal's in a real run's place and the
 * other way round, which this run would overwrite.
 */
export function checkOwner(
  where: string,
  current: OutputsOwner | undefined,
  owner: OutputsOwner,
  stateExists: (path: string) => boolean,
): void {
  if (!current) return;
  const same =
    current.rehearsal === owner.rehearsal &&
    current.runId === owner.runId &&
    (current.state === owner.state || !stateExists(current.state));
  if (same) return;
  const what = current.rehearsal
    ? `a rehearsal's outputs (--simulate, state ${current.state})`
    : `the outputs of the run whose state is ${current.state}`;
  const goOn = current.rehearsal === owner.rehearsal ? `, or --state ${current.state} to go on with that run` : '';
  throw new OutputsTakenError(
    `${where} holds ${what}; this run (state ${owner.state}${owner.rehearsal ? ', a rehearsal' : ''}) would overwrite them, so nothing was submitted. Pass another --out${goOn}. (${OWNER_FILE} in that dir names its owner.)`,
  );
}
