/**
 * Where a rehearsal, or a run against a service that says it is a
 * simulator, keeps its things apart from a real run's, and which state such a
 * run may take: the service's kind, the places, starting a rehearsal over,
 * and refusing a state made against the other kind of service.
 */
import { existsSync, rmSync } from 'node:fs';
import { isAbsolute, relative } from 'node:path';
import { saysSimulator, type PoolSetup } from '../api/pool-setup.js';
import { thumbsBeside } from '../copies/thumbs/kept.js';
import type { ResolvedRunOptions } from '../options/resolve.js';
import { OPEN_STATES, type Store } from '../store/index.js';
import { describeService, IN_PROCESS, madeAgainst, type MadeAgainst } from '../store/made-against.js';
import { openStateReadOnly } from '../store/state-path.js';
import { EXIT, ExitError } from '../util/exit-error.js';

/**
 * A simulator's state never passes for a real run, nor a real run's for a
 * simulator's: a run whose service is the other kind is refused (exit 2)
 * before anything is sent, naming the state, both services, and the command
 * that starts afresh. A state an older genbatch made, of no known service, goes on.
 */
export function refuseOtherService(
  store: Store,
  statePath: string,
  service: Omit<MadeAgainst, 'how'>,
  options: Pick<ResolvedRunOptions, 'statePath' | 'manifestPath' | 'cwd'>,
): void {
  const made = madeAgainst(store);
  if (!made || made.simulator === service.simulator) return;
  const shown = relative(options.cwd, statePath) || statePath;
  const manifest = isAbsolute(options.manifestPath)
    ? relative(options.cwd, options.manifestPath)
    : options.manifestPath;
  const afresh = options.statePath
    ? `To start afresh here, leave out --state (genbatch run ${manifest}) or give a new path.`
    : `To start afresh, move it aside (mv ${shown} ${shown}.old), then run the same command.`;
  const why = made.simulator
    ? "A simulator's state never passes for a real run: its jobs, charges and outputs were the simulator's."
    : "A real run's state is never resumed against a simulator: its jobs were paid for on the service.";
  throw new ExitError(
    EXIT.usage,
    `${shown} was made against ${describeService(made)}${made.how === 'inferred' ? ' (as its runs show)' : ''}; this run's service, ${describeService(service)}, ${service.simulator ? 'says it is a simulator' : 'does not say it is one'}. ${why} Nothing was sent. ${afresh}`,
  );
}

/** Whether the run's service is a simulator: a rehearsal's at once, else once its /me answers (a failed answer is said later, by the run). */
export function simulatedService(
  options: Pick<ResolvedRunOptions, 'simulate'>,
  pool: Promise<PoolSetup>,
): Promise<boolean> {
  if (options.simulate) return Promise.resolve(true);
  return pool.then(
    (setup) => saysSimulator(setup.accounts[0]),
    () => false,
  );
}

/**
 * Removes an earlier rehearsal's state and the review's thumbnails beside it (its outputs are replaced, at the
 * same paths); a real run's state given by --state is refused, never touched.
 */
export function startRehearsalOver(statePath: string, defaultPath: boolean, onlyInProcess = false): boolean {
  if (!existsSync(statePath)) return false;
  if (onlyInProcess && !isInProcessRehearsal(statePath)) return false;
  // .genbatch/<name>.rehearsal.sqlite is only ever a rehearsal's; a path given by --state must say it is one.
  if (!onlyInProcess && !defaultPath && !isRehearsalState(statePath)) {
    throw new ExitError(
      EXIT.usage,
      `${statePath} is the state of a real run or a trial; a rehearsal (--simulate) never touches it. Leave out --state, or give a path of its own.`,
    );
  }
  for (const suffix of ['', '-wal', '-shm']) rmSync(`${statePath}${suffix}`, { force: true });
  rmSync(thumbsBeside(statePath), { recursive: true, force: true });
  return true;
}

/** A rehearsal's rejects are redone on its own state, which a fresh simulator can carry on only once nothing of it is open. */
export function keepFinishedRehearsal(statePath: string): void {
  if (!existsSync(statePath))
    throw new ExitError(EXIT.usage, `no rehearsal has run yet (${statePath}): nothing was reviewed to redo.`);
  const { open } = openOf(statePath);
  if (open > 0)
    throw new ExitError(
      EXIT.usage,
      `the rehearsal has ${open} unfinished item${open === 1 ? '' : 's'}: a rehearsal is redone only once it ran to the end (run it again with --simulate first).`,
    );
}

/**
 * Whether a rehearsal goes on with its state rather than start over: it ran to the end, and decisions made on it
 * since (approve, review) let items go, which nothing has sent yet. Its next step, typed as printed, carries them out.
 */
export function rehearsalGoesOn(statePath: string): boolean {
  if (!existsSync(statePath) || !isInProcessRehearsal(statePath)) return false;
  const { open, unlocked } = openOf(statePath);
  return unlocked > 0 && open === unlocked;
}

/** The rehearsal's open items, and of them those a decision let go (pending, gated) that nothing has sent. */
function openOf(statePath: string): { open: number; unlocked: number } {
  const store = openStateReadOnly(statePath);
  try {
    const counts = store.itemReports.counts();
    return { open: OPEN_STATES.reduce((n, state) => n + counts[state], 0), unlocked: store.gates.unlocked() };
  } finally {
    store.close();
  }
}

export function isInProcessRehearsal(statePath: string): boolean {
  const store = openStateReadOnly(statePath);
  try {
    return madeAgainst(store)?.service === IN_PROCESS;
  } finally {
    store.close();
  }
}

function isRehearsalState(statePath: string): boolean {
  const store = openStateReadOnly(statePath);
  try {
    return store.meta('rehearsal') === '1' || store.meta('run_id') === undefined;
  } finally {
    store.close();
  }
}
