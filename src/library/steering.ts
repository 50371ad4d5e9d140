/**
 * Steering a running `run` from another process, through its state file (no
 * signal, no socket): pause, resume, drain, and what the run answered.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Store, type SteeringAnswer, type SteeringMode } from '../store/index.js';
import { EXIT, ExitError } from '../util/exit-error.js';
import { localDateTime, num } from '../util/words.js';
import { existsSync } from 'node:fs';
import { existingStatePathFor, kindMeant, statePathFor } from '../store/state-path.js';
import { locate } from '../manifest/load-valid.js';
import type { StateChoice } from './state.js';

export type ControlCommand = 'pause' | 'resume' | 'drain';

/** How long a command waits for the run to say it acted: it looks every quarter second. */
const ANSWER_WAIT_MS = 3_000;

/** What `pause`, `resume` and `drain` print with --json. */
export interface ControlResult {
  command: ControlCommand;
  state: string;
  /** The pid of the run that holds the state, if one does. */
  run: number | null;
  /** Whether the request is now in the state (a drain with no run records nothing). */
  recorded: boolean;
  /** What the run answered, once it had acted. */
  answer: SteeringAnswer | null;
  message: string;
}

const asks: Record<ControlCommand, SteeringMode | undefined> = {
  pause: 'paused',
  resume: undefined,
  drain: 'draining',
};

/**
 * Asks the running `run` of the state, through the state file (no signal, no
 * socket), to pause, resume or drain, and says what it did; with no run, a
 * pause or resume is recorded for the next one, and a drain has nothing to do.
 */
export async function steer(
  command: ControlCommand,
  path: string,
  flags: StateChoice,
  cwd: string,
): Promise<ControlResult> {
  const manifest = await locate(path, cwd);
  const own = statePathFor(manifest, flags.state, cwd, kindMeant(manifest, flags, cwd));
  // Nothing ran yet, here or as another kind of run (whose state the refusal below points to), and no path given.
  const nothingRan =
    !flags.state &&
    (['real', 'trial', 'rehearsal'] as const).every((k) => !existsSync(statePathFor(manifest, undefined, cwd, k)));
  if (nothingRan) {
    const early = beforeAnyRun(command, own, flags, path);
    if (early) return { command, state: own, run: null, ...early };
  }
  const statePath = existingStatePathFor(manifest, flags, cwd);
  let opened: ReturnType<typeof Store.openForSteering>;
  try {
    opened = Store.openForSteering(statePath);
  } catch (error) {
    throw new ExitError(EXIT.environment, (error as Error).message, undefined, { cause: error });
  }
  const { store, runPid } = opened;
  try {
    // A rehearsal's state is named by --simulate: what a hint says to run must carry it.
    const result = await act(command, store, runPid, flags.simulate ? `${path} --simulate` : path);
    return { command, state: statePath, run: runPid ?? null, ...result };
  } finally {
    store.close();
  }
}

async function act(
  command: ControlCommand,
  store: Store,
  runPid: number | undefined,
  manifestArg: string,
): Promise<Omit<ControlResult, 'command' | 'state' | 'run'>> {
  const before = store.steering.request();
  const mode = asks[command];
  if (command === 'drain' && runPid === undefined)
    return { recorded: false, answer: null, message: 'no run holds this state: nothing to drain' };
  if (command === 'resume' && before?.mode !== 'paused') {
    return {
      recorded: false,
      answer: null,
      message:
        runPid === undefined
          ? 'not paused: no run holds this state, and a run started on it goes on'
          : `the run (pid ${runPid}) is not paused`,
    };
  }
  if (command === 'pause' && before?.mode === 'paused') {
    return {
      recorded: true,
      answer: store.steering.answer() ?? null,
      message: `already paused since ${localDateTime(before.since)}${runPid === undefined ? ' (no run holds this state)' : ` (the run, pid ${runPid}, sends nothing new)`}`,
    };
  }
  const askedAt = Date.now();
  store.steering.ask(mode, askedAt);
  if (runPid === undefined) {
    const message =
      command === 'pause'
        ? `paused: no run holds this state; recorded, so a run started on it starts paused (genbatch resume ${manifestArg} goes on)`
        : 'resumed: no run holds this state; a run started on it goes on';
    return { recorded: true, answer: null, message };
  }
  const answer = await answerOf(store, askedAt, mode ?? 'running');
  if (!answer)
    return {
      recorded: true,
      answer: null,
      message: `${command === 'pause' ? 'paused' : command === 'resume' ? 'resumed' : 'draining'}: recorded; the run (pid ${runPid}) has not said so within ${ANSWER_WAIT_MS / 1000} s (it looks every quarter second)`,
    };
  const inFlight = `${num(answer.inFlight)} job${answer.inFlight === 1 ? '' : 's'} in flight`;
  const notSent = `${num(answer.notSent)} item${answer.notSent === 1 ? '' : 's'} not sent`;
  const message =
    command === 'pause'
      ? `paused: the run (pid ${runPid}) sends nothing new since ${localDateTime(answer.at)}; ${inFlight} ${answer.inFlight === 1 ? 'is' : 'are'} still polled and downloaded; ${notSent} wait (genbatch resume ${manifestArg} goes on)`
      : command === 'resume'
        ? `resumed: the run (pid ${runPid}) sends again (${notSent} yet)`
        : `draining: the run (pid ${runPid}) sends nothing new; it finishes the ${inFlight}, downloads them, and exits 3 (${notSent})`;
  return { recorded: true, answer, message };
}

/** The run's answer to the request made at `askedAt`, once it has acted (within a few seconds), else undefined. */
async function answerOf(
  store: Store,
  askedAt: number,
  mode: SteeringAnswer['mode'],
): Promise<SteeringAnswer | undefined> {
  for (const deadline = Date.now() + ANSWER_WAIT_MS; Date.now() < deadline; await sleep(50)) {
    const answer = store.steering.answer();
    if (answer && answer.mode === mode && answer.at >= askedAt) return answer;
  }
  return undefined;
}

/**
 * Before anything ran (no state yet): a pause is recorded in a new state, so
 * the first run starts paused; a resume or a drain has nothing to act on. A
 * rehearsal starts over each time, so nothing is recorded for it.
 */
function beforeAnyRun(
  command: ControlCommand,
  statePath: string,
  flags: StateChoice,
  path: string,
): Omit<ControlResult, 'command' | 'state' | 'run'> | undefined {
  if (command === 'resume') return { recorded: false, answer: null, message: `not paused: ${path} has not run yet` };
  if (command === 'drain')
    return { recorded: false, answer: null, message: `nothing to drain: ${path} has not run yet` };
  if (flags.simulate)
    throw new ExitError(
      EXIT.usage,
      `no rehearsal has run yet (${statePath}), and one starts over each time: pause it while it runs (genbatch pause ${path} --simulate)`,
    );
  // The state made here is the one the first run takes up: it records the pause, and nothing else.
  Store.open(statePath).close();
  return undefined;
}
