import { existsSync } from 'node:fs';
import type { ApiClient } from '../api/client.js';
import { Catalog } from '../api/catalog.js';
import { FIRST_CONTACT_MS } from '../api/first-contact.js';
import { untilAnswered } from '../api/until-answered.js';
import type { UntilAnsweredOptions } from '../api/until-answered.js';
import type { Coordinator } from '../coordinator/postgres.js';
import { describeCoordinator } from '../coordinator/url.js';
import { IssueList, outDirProblem, runBudget, type ManifestIssue, type ManifestTop } from '../manifest/index.js';
import { checkValid, issueReport, loadValid } from '../manifest/load-valid.js';
import { checkAgainstService, shapeProblems } from '../manifest/online.js';
import { Store } from '../store/index.js';
import { openOutputSink } from '../sink/index.js';
import { EXIT, ExitError, usageError } from '../util/exit-error.js';
import type { RunInputs } from './shared.js';
import type { ToSync } from './sync/first-sync.js';
import type { ResolvedRunOptions } from '../options/resolve.js';
import type { RunClock } from '../scheduler/clock.js';
import { rescaledPool, serviceTimeScale, setUpPool, type PoolSetup } from '../api/pool-setup.js';
import { IN_PROCESS, recordMadeAgainst, serviceName } from '../store/made-against.js';
import { refuseOtherService, simulatedService } from './rehearsal.js';
import {
  clearPlace,
  mayResume,
  placesOnceAnswered,
  sinkSettingsOf,
  stateToResume,
  type PlaceCleared,
  type TakenPlaces,
} from './places.js';
import { holdsSources, planResume } from './sync/resume.js';
import type { Closing } from '../util/closing.js';

/**
 * How long a start-up request (each key's /me, the catalog) waits for its
 * answer before it is asked again: a service that swallows requests (a black
 * hole) would otherwise hold the start for the client's 30 s each time.
 */
const STARTUP_TIMEOUT_MS = 5_000;

/** The keys a run goes with, as the command line connected them (to the service, or to an in-process simulator). */
export interface RunConnection {
  keys: { fingerprint: string; client: ApiClient }[];
  simulator?: { apiKey: string } | undefined;
  close(): Promise<void>;
}

/** What a start says while the service answers nothing yet, and what ends that wait (an interrupt). */
export interface ServiceWait {
  onWait(reason: string, upToMs: number): void;
  signal?: AbortSignal | undefined;
}

/** What of a run's inputs its start opens: the keys, the log, the close stack and the tuning are the Run's to add. */
type Opened = Omit<RunInputs, 'keys' | 'logger' | 'closing' | 'tuning'>;

/** A run assembled and checked, before its first submission: what it runs, where it writes, with which keys. */
export interface PreparedRun extends OpenedService, Opened, PlaceCleared, Pick<TakenPlaces, 'restored'> {
  readonly catalog: Catalog;
  statePath: string;
  /** Where outputs go: a folder's absolute path, or `s3://BUCKET/PREFIX`. */
  outDir: string;
  logPath: string;
  itemCount: number;
  warnings: readonly ManifestIssue[];
  /** Its items are read back from the state, not expanded again. */
  resumed: boolean;
  /** The manifest's items still to be written into the state (none on a resume whose sources are unchanged). */
  toSync: ToSync | undefined;
  /** The items put back because their current version was rejected in review (--redo-rejected). */
  redoneRejected: readonly string[];
  /** The state was made by another manifest file of the same name, still there: this run goes on with its state. */
  madeBy: string | undefined;
  /** The service says it is a simulator (or it is a rehearsal's): the state and outputs are kept apart from a real run's. */
  simulated: boolean;
}

/**
 * Assembles a run: the keys' /me asked while the manifest is read and
 * checked (a round trip less before the first submission), the manifest
 * checked without holding its items (or its items read back from the state),
 * the pool, the coordinator and the catalog, the manifest against the
 * catalog, and the state opened. Nothing is submitted here.
 */
export async function prepareRun(
  options: ResolvedRunOptions,
  connecting: Promise<RunConnection>,
  wait: ServiceWait,
  closing: Closing,
): Promise<PreparedRun> {
  const waitForService = untilAnsweredBy(options, wait);
  const keys = askKeys(connecting, options, waitForService);
  // Closed last: a failure of what follows (the manifest's problem, say) ends a wait for the service at once.
  closing.defer(keys.close);
  const outProblem = options.out === undefined ? undefined : outDirProblem(options.out);
  if (outProblem) throw usageError(`--out ${outProblem}. Nothing was submitted.`);
  // Whether the service says it is a simulator decides the places: asked while the manifest is read and hashed.
  const places = placesOnceAnswered(options, simulatedService(options, keys.pool));
  // The manifest's problem is what the user hears about, not the service's answer.
  const prepared = await prepareManifest(options, places);
  const opened = await openService(options, keys, prepared, waitForService, closing);
  const { manifest, checked, plan } = prepared;
  const { state, outDir, log, kind } = prepared.places;
  // A rehearsal starts over each time: an earlier rehearsal's outputs in its folder are replaced.
  const outputs = await openOutputSink(outDir, sinkSettingsOf(options, state));
  // Deferred after the state, so closed before it: by then the run has written through it all it writes there.
  closing.defer(() => outputs.close());
  const redoneRejected = options.redoRejected
    ? opened.store.items.putBackRejected(opened.store.reviews.rejectedCurrent(), Date.now())
    : [];
  const recorded = opened.store.meta('manifest');
  return {
    redoneRejected,
    restored: prepared.restored,
    madeBy: recorded && recorded !== manifest.source.absPath && existsSync(recorded) ? recorded : undefined,
    simulated: kind !== 'real',
    rehearsalStartedOver: prepared.rehearsalStartedOver,
    rehearsalGoesOnWith: prepared.rehearsalGoesOnWith,
    ...opened,
    manifest,
    statePath: state,
    outDir,
    budget: runBudget(options.maxCredits, manifest.manifest),
    outputs,
    logPath: log,
    itemCount: checked ? checked.count : plan.resume!.synced.items,
    warnings: checked?.warnings ?? [],
    resumed: !checked,
    // The runner holds what it needs of the checked manifest until its items are written.
    toSync: checked ? { items: checked, fingerprint: plan.fingerprint } : undefined,
  };
}

/** What the runner takes of a prepared run, as it is. */
export function openedOf(prepared: PreparedRun): Opened {
  const { options, store, manifest, catalog, toSync, outputs, budget, statePath } = prepared;
  return { options, store, manifest, catalog, toSync, outputs, budget, statePath };
}

/** How long a start waits for a service that answers nothing yet (--unreachable-minutes), asking again every second of the service's time. */
function untilAnsweredBy(
  options: Pick<ResolvedRunOptions, 'unreachableMs' | 'clock'>,
  wait: ServiceWait,
): UntilAnsweredOptions {
  return {
    unreachableMs: options.unreachableMs,
    everyMs: Math.min(1_000, Math.max(100, options.clock.scaled(1_000))),
    onWait: wait.onWait,
    ...(wait.signal ? { signal: wait.signal } : {}),
  };
}

/** The manifest as the run takes it: checked (not held), or its items read back from the state on a resume; and its places. */
interface PreparedManifest extends TakenPlaces, PlaceCleared {
  plan: Awaited<ReturnType<typeof planResume>>;
  checked: Awaited<ReturnType<typeof checkValid>> | undefined;
  manifest: ManifestTop;
}

async function prepareManifest(
  options: ResolvedRunOptions,
  placesFor: (top: ManifestTop) => Promise<TakenPlaces>,
): Promise<PreparedManifest> {
  const { manifestPath: path, cwd } = options;
  // A resume whose sources are unchanged takes its items from the state (a rehearsal starts over, --redo-changed looks
  // at each item): the state at the run's own place, once the service has said whose, while the sources are hashed.
  // Only where a state on disk may hold these sources: else the manifest is checked without waiting for the service.
  const plan = options.simulate
    ? {}
    : await planResume(
        path,
        cwd,
        async (top, fingerprint) =>
          mayResume(options, top, (state) => holdsSources(state, fingerprint))
            ? stateToResume((await placesFor(top)).places)
            : undefined,
        !options.redoChanged,
      );
  // Checked without holding the items: the run expands them again as it writes them into the state.
  const checked = plan.resume ? undefined : await checkValid(path, cwd, plan.top, plan.rowsRead);
  // The top level only: the items live in the state once synced, not in memory for the whole run.
  const manifest = plan.resume?.top ?? topOf(checked!);
  const taken = await placesFor(manifest);
  return { plan, checked, manifest, ...taken, ...clearPlace(options, taken.places) };
}

/**
 * The service as the run uses it: the keys that work, the coordinator, the
 * catalog, the state opened, and the options at the service's own time scale
 * where it says one and no flag chose it.
 */
interface OpenedService extends Pick<Opened, 'options' | 'store'> {
  connection: RunConnection;
  pool: PoolSetup;
  coordinator: Coordinator | undefined;
  readonly catalog: Catalog;
}

async function openService(
  given: ResolvedRunOptions,
  keys: ReturnType<typeof askKeys>,
  prepared: PreparedManifest,
  waitForService: UntilAnsweredOptions,
  closing: Closing,
): Promise<OpenedService> {
  const { manifestPath: path, cwd } = given;
  const connection = await keys.connecting;
  const shapes = prepared.plan.resume ? prepared.plan.resume.shapes : prepared.checked!.shapes;
  const types = new Set(shapes.map((s) => s.type));
  // The catalog is asked of the first key while the keys' /me answers may still be on their way.
  const firstKey = connection.keys[0]!;
  const earlyCatalog = Catalog.fetch(firstKey.client, types, STARTUP_TIMEOUT_MS).catch(() => undefined);
  let pool = await keys.pool;
  let options = given;
  // A time-scaled simulator says its scale: paced to it unasked (an explicit --time-scale wins).
  const scale = serviceTimeScale(pool.accounts[0]);
  if (scale !== undefined && given.atServiceTimeScale && scale !== given.clock.timeScale) {
    options = given.atServiceTimeScale(scale);
    pool = rescaledPool(pool, options.limits, options.clock);
  }
  if (pool.keys.length === 0)
    throw new ExitError(
      EXIT.stopped,
      `the service refused every key of GENBATCH_API_KEYS: ${pool.refused.map((r) => `${r.fingerprint} ${r.code}`).join(', ')}. Nothing was submitted.`,
    );
  const coordinator = await openCoordinator(options.coordinatorUrl, options.clock);
  if (coordinator) closing.defer(() => coordinator.close());
  // The service's view (models, kinds, modes, allowed values, scopes): a mismatch is exit 2 before anything is sent.
  // Asked again of the pool's first key if the first key was refused or the early answer failed, as it was asked before.
  const early = pool.keys[0]!.fingerprint === firstKey.fingerprint ? await earlyCatalog : undefined;
  const catalog =
    early ??
    (await untilAnswered(() => Catalog.fetch(pool.keys[0]!.client, types, STARTUP_TIMEOUT_MS), waitForService));
  await checkShapes(path, cwd, shapes, prepared.manifest, catalog, pool);
  const service = {
    simulator: prepared.places.kind !== 'real',
    service: options.simulate ? IN_PROCESS : serviceName(options.baseUrl ?? options.env.GENBATCH_BASE_URL),
  };
  const store = Store.open(prepared.places.state);
  closing.defer(() => store.close());
  // Asked of the state the run opens (a second connection would read a killed run's WAL again).
  refuseOtherService(store, prepared.places.state, service, options);
  recordMadeAgainst(store, service);
  return { connection, pool, coordinator, catalog, store, options };
}

/** The items' shapes (the checked manifest's, or the state's) pass, or the whole manifest is loaded to say where each problem is. */
async function checkShapes(
  path: string,
  cwd: string,
  shapes: Parameters<typeof shapeProblems>[0],
  manifest: ManifestTop,
  catalog: Catalog,
  pool: PoolSetup,
): Promise<void> {
  if (shapeProblems(shapes, manifest.source, catalog, pool.scopes) === 0) return;
  const loaded = await loadValid(path, cwd);
  const issues = new IssueList();
  checkAgainstService(loaded.items, loaded.source, catalog, pool.scopes, issues);
  if (issues.count > 0) throw new ExitError(EXIT.usage, issueReport(issues));
  // Its items no longer are what was checked: nothing is sent on a guess.
  throw new ExitError(
    EXIT.usage,
    `${path} or its files changed while they were checked; nothing was submitted. Run the same command again.`,
  );
}

/** The connection, then each key's view (scopes, its own limits and cap; a key the service refuses is left out); nothing awaited until the caller wants them. */
function askKeys(
  connecting: Promise<RunConnection>,
  { limits, clock }: ResolvedRunOptions,
  wait: UntilAnsweredOptions,
): { connecting: Promise<RunConnection>; pool: Promise<PoolSetup>; close: () => Promise<void> } {
  // Closed before the pool was set up (the manifest failed first): a wait for the service ends at once.
  const closed = new AbortController();
  const pool = connecting.then((connection) => {
    const signal = wait.signal ? AbortSignal.any([wait.signal, closed.signal]) : closed.signal;
    // The signal ends a /me on its way too: a service that swallows it is not waited on for its timeout.
    return untilAnswered(() => setUpPool(connection.keys, limits, clock, STARTUP_TIMEOUT_MS, signal), {
      ...wait,
      firstContactMs: FIRST_CONTACT_MS,
      signal,
    });
  });
  // Awaited later, or never when the manifest fails first: a failure meanwhile is no unhandled rejection.
  pool.catch(() => {});
  return {
    connecting,
    pool,
    close: async () => {
      closed.abort();
      await pool.catch(() => {});
      await (await connecting.catch(() => undefined))?.close();
    },
  };
}

/**
 * The coordinator named by --coordinator or GENBATCH_COORDINATOR, its schema
 * migrated; none without one. Its leases last a minute of the service's time
 * (2 s at the least): a process that dies frees its slots that much later.
 */
async function openCoordinator(url: string | undefined, clock: RunClock): Promise<Coordinator | undefined> {
  if (!url) return undefined;
  if (!/^postgres(ql)?:\/\//i.test(url))
    throw usageError(`--coordinator takes a postgres:// URL; got one that is not (${describeCoordinator(url)}).`);
  try {
    // Loaded only when asked for: pg costs a run without a coordinator nothing at start.
    const { Coordinator } = await import('../coordinator/postgres.js');
    return await Coordinator.open(url, { leaseMs: Math.max(2_000, clock.scaled(60_000)) });
  } catch (error) {
    throw new ExitError(
      EXIT.environment,
      `${(error as Error).message}\nThe coordinator at ${describeCoordinator(url)} cannot be used; nothing was submitted. Check that it is reachable (or leave out --coordinator to pace this process alone), then run the same command again.`,
      undefined,
      { cause: error },
    );
  }
}

function topOf({ source, manifest, name, outputDir, outputName, vars }: ManifestTop): ManifestTop {
  return { source, manifest, name, outputDir, outputName, vars };
}
