import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { bucketLocationOf, resolveOutDir, type ManifestTop } from '../manifest/index.js';
import type { ResolvedRunOptions } from '../options/resolve.js';
import { openOutputSink } from '../sink/index.js';
import { Store } from '../store/index.js';
import { PLACE_SUFFIX, statePathFor, type StateKind } from '../store/state-path.js';
import { isInProcessRehearsal, keepFinishedRehearsal, rehearsalGoesOn, startRehearsalOver } from './rehearsal.js';

/**
 * Where a run's things go: its state, its outputs (a folder's absolute path,
 * or `s3://BUCKET/PREFIX`) and its log. A rehearsal's and a trial's are apart
 * from a real run's, and from each other's (PLACE_SUFFIX).
 */
export interface Places {
  readonly kind: StateKind;
  readonly state: string;
  readonly outDir: string;
  readonly log: string;
}

type PlaceOptions = Pick<ResolvedRunOptions, 'out' | 'cwd' | 'statePath' | 'simulate'>;

/** The places of a run of `kind`: the one place they are worked out. */
function placesOf(
  options: PlaceOptions,
  top: Pick<ManifestTop, 'outputDir' | 'name' | 'source'>,
  kind: StateKind,
): Places {
  const state = statePathFor(top, options.statePath, options.cwd, kind);
  const suffix = PLACE_SUFFIX[kind];
  // --out, else the manifest's: the real run's outputs, which a rehearsal's and a trial's sit beside.
  const realOutDir = options.out ? resolveOutDir(options.cwd, options.out) : top.outputDir;
  return {
    kind,
    state,
    outDir: rehearsalPlace(realOutDir, suffix),
    log: join(dirname(state), `${top.name}${suffix}.log`),
  };
}

/**
 * A rehearsal's or a trial's place beside the real one: `out.rehearsal` or `out.simulated`, or a bucket's
 * `PREFIX.rehearsal` (`rehearsal` at its root).
 */
function rehearsalPlace(location: string, suffix: string): string {
  const bucket = suffix ? bucketLocationOf(location) : undefined;
  if (bucket && !bucket.prefix) return `${location}/${suffix.slice(1)}`;
  return `${location}${suffix}`;
}

/** Whose places a run takes: a rehearsal's (--simulate), a trial's (its service says it is a simulator), or a real run's. */
function kindOf(options: Pick<ResolvedRunOptions, 'simulate'>, simulated: boolean): StateKind {
  if (options.simulate) return 'rehearsal';
  return simulated ? 'trial' : 'real';
}

/** The places, and the state restored into them from beside the outputs (when there was none). */
export interface TakenPlaces {
  readonly places: Places;
  /** No state was here: the newest whole snapshot beside the outputs was restored (and those passed over, torn). */
  readonly restored: { from: string; takenAt: number; skipped: readonly string[] } | undefined;
}

type SinkOptions = Pick<ResolvedRunOptions, 'keepLocal' | 'simulate' | 'idleTimeoutMs' | 'unreachableMs' | 'env'>;

/**
 * The run's places, worked out once, when the service has said whether it is a
 * simulator and the manifest's top level is read (the first call's top; each
 * later call gets the same). Asked while the manifest's sources are still
 * hashed, so the service's answer costs no wait of its own.
 */
export function placesOnceAnswered(
  options: PlaceOptions & SinkOptions,
  simulated: Promise<boolean>,
): (top: ManifestTop) => Promise<TakenPlaces> {
  let taking: Promise<TakenPlaces> | undefined;
  return (top) =>
    (taking ??= (async () => {
      const places = placesOf(options, top, kindOf(options, await simulated));
      return { places, restored: await restoreState(options, places) };
    })());
}

/** The output sink's settings, the same for the run and for a restore of its state. */
export function sinkSettingsOf(options: SinkOptions, statePath: string): Parameters<typeof openOutputSink>[1] {
  return {
    statePath,
    keepLocal: options.keepLocal,
    simulate: options.simulate,
    patience: { idleTimeoutMs: options.idleTimeoutMs, unreachableMs: options.unreachableMs },
    env: options.env,
  };
}

/**
 * With outputs in a bucket and no state here (a new machine, a lost disk):
 * the newest whole snapshot of the state from beside the outputs, put where
 * the state goes. A rehearsal starts over and never restores; a run against a
 * simulator restores its own places' state, never a real run's.
 */
async function restoreState(options: SinkOptions, places: Places): Promise<TakenPlaces['restored']> {
  if (places.kind === 'rehearsal' || !bucketLocationOf(places.outDir) || existsSync(places.state)) return undefined;
  const sink = await openOutputSink(places.outDir, sinkSettingsOf(options, places.state));
  // A bucket that cannot be written is said by the run's own write check, as for any run (exit 4, nothing sent).
  const restored = await (async () => {
    if (!sink.snapshots || (await sink.probe())) return undefined;
    return sink.snapshots.restore(Store.damage);
  })().finally(() => sink.close());
  return (
    restored && {
      from: `${places.outDir}/${restored.key.split('/').slice(-4).join('/')}`,
      takenAt: restored.takenAt,
      skipped: restored.skipped,
    }
  );
}

/**
 * Whether any state this run could take may resume sources of `fingerprint`, asked of the disk alone before the
 * service says whose the run is: a real run's or a trial's state that holds them, or a bucket that may hold a
 * snapshot where no state is. When none may, the manifest is checked at once, without waiting for the service (its
 * problem is said even while the service answers nothing).
 */
export function mayResume(
  options: PlaceOptions,
  top: Pick<ManifestTop, 'outputDir' | 'name' | 'source'>,
  holds: (statePath: string) => boolean,
): boolean {
  return (['real', 'trial'] as const).some((kind) => {
    const places = placesOf(options, top, kind);
    return existsSync(places.state) ? holds(places.state) : bucketLocationOf(places.outDir) !== undefined;
  });
}

/**
 * The state a resume may be planned from: none where the place holds an
 * in-process rehearsal's (a trial's place never resumes one: it is started
 * over by `clearPlace`).
 */
export function stateToResume(places: Places): string | undefined {
  return places.kind === 'trial' && existsSync(places.state) && isInProcessRehearsal(places.state)
    ? undefined
    : places.state;
}

/** What a run found at its state's place before it reads it: a rehearsal started over, or one that goes on. */
export interface PlaceCleared {
  /** An in-process rehearsal's state that this run against a simulator started over (its jobs went with that process). */
  rehearsalStartedOver: string | undefined;
  /** A rehearsal that goes on with its state, not over: to carry out the decisions made on it. */
  rehearsalGoesOnWith: 'decisions' | undefined;
}

/**
 * Readies the state's place once the manifest is checked. A fresh in-process
 * simulator knows none of an earlier run's jobs: a rehearsal starts over, and
 * never on a real run's state; an in-process rehearsal's state at a trial's
 * place is started over too. Redoing a finished rehearsal's rejects goes on
 * with its state, and so does a finished rehearsal whose decisions let items
 * go: its printed next step carries them out.
 */
export function clearPlace(
  options: PlaceOptions & Pick<ResolvedRunOptions, 'redoRejected'>,
  places: Places,
): PlaceCleared {
  const byDefault = !options.statePath;
  if (places.kind === 'trial')
    return {
      rehearsalStartedOver: startRehearsalOver(places.state, byDefault, true) ? places.state : undefined,
      rehearsalGoesOnWith: undefined,
    };
  const cleared: PlaceCleared = { rehearsalStartedOver: undefined, rehearsalGoesOnWith: undefined };
  if (places.kind !== 'rehearsal') return cleared;
  if (options.redoRejected) keepFinishedRehearsal(places.state);
  else if (rehearsalGoesOn(places.state)) cleared.rehearsalGoesOnWith = 'decisions';
  else startRehearsalOver(places.state, byDefault);
  return cleared;
}
