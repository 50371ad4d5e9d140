import { dirname } from 'node:path';
import { openSqlite } from './driver.js';
import { Accounting } from './accounting.js';
import { Counters } from './counters.js';
import { MetricsQueries } from './metrics-queries.js';
import { Attempts } from './attempts.js';
import { openDb, openDbReadOnly, openDbReadWriteUnlocked, StateFileError, type Db } from './db.js';
import { ItemReports } from './item-reports.js';
import { ItemSyncer } from './item-sync.js';
import { Items } from './items.js';
import { ReadyQueue } from './ready-queue.js';
export type { DownloadingItem } from './ready-queue.js';
import { Lifecycle } from './lifecycle.js';
import { acquireLock, lockHolder } from './lock.js';
import { Steering } from './steering.js';
import { Publications } from './publications.js';
import { WebCopies } from './web-copies.js';
import { OutputFiles } from './output-files.js';
import { Gates } from './gates.js';
import { Decisions } from './decisions.js';
import { ReviewQueries } from './review-queries.js';
import { Reviews } from './reviews.js';
import { Runs } from './runs.js';
import { Uploads } from './uploads.js';
import { makeFolderSync } from '../util/make-folder.js';

export { StateFileError } from './db.js';
export { SqliteDriverError } from './driver.js';
export type { ItemEcho, ItemFacts, ItemProblem, ItemRow, ItemShape, ItemSync } from './items.js';
export {
  ENDED_STATES,
  ENDED_WITHOUT_OUTPUT,
  ITEM_STATES,
  OPEN_STATES,
  UNANSWERED_STATES,
  WAITING_STATES,
  type ItemState,
} from './machine/states.js';
export type { ErrorNote, SentRecord } from './lifecycle.js';
export type { AttemptForReconcile, AttemptRow } from './attempts.js';
export type { PublicationCounts, Unpublished } from './publications.js';
export type { WebCopyRow, ToCopy } from './web-copies.js';
export type { ReviewDecision } from './reviews.js';
export type { ReviewFilter } from './review-filter.js';
export type { NewOutput, ReviewCard, SeriesBuckets } from './review-queries.js';
export type { RunRow } from './runs.js';
export type { CounterDelta, CounterName } from './counters.js';
export type { SteeringAnswer, SteeringMode, SteeringRequest } from './steering.js';
export { lockHolder } from './lock.js';
export type { WaitingForDecisions } from './gates.js';
export type { DecisionEffect, DecisionEntry } from './decisions.js';
export { JOB_SECONDS_BUCKETS } from './job-seconds.js';

/** The run's durable state: one SQLite file, one writer process. */
export class Store {
  readonly items: Items;
  /** The manifest's items written into the state, and what a resume reads back of them. */
  readonly itemSync: ItemSyncer;
  /** What a run takes up next. */
  readonly queue: ReadyQueue;
  /** What status, the results files and reconcile read of the items. */
  readonly itemReports: ItemReports;
  readonly attempts: Attempts;
  /** Each output's file: where it was saved, its bytes' sha256, its version. */
  readonly outputFiles: OutputFiles;
  /** Outputs published to a bucket, and those that wait to be. */
  readonly publications: Publications;
  /** Web copies of image outputs. */
  readonly webCopies: WebCopies;
  readonly reviews: Reviews;
  /** What genbatch review reads: cards by filter, new outputs, versions, the run's series. */
  readonly reviewQueries: ReviewQueries;
  readonly accounting: Accounting;
  readonly counters: Counters;
  readonly metrics: MetricsQueries;
  readonly uploads: Uploads;
  readonly runs: Runs;
  /** What pause, resume and drain ask of the run, and what it answered. */
  readonly steering: Steering;
  /** The item's named, guarded transitions: the only way the runner changes an item's state. */
  readonly lifecycle: Lifecycle;
  /** Which items wait on which gates (the manifest's approved), and what waits. */
  readonly gates: Gates;
  /** A decision and what it brings about, in one call; the decision record. */
  readonly decisions: Decisions;
  private checkpointTimer: NodeJS.Timeout | undefined;
  /** Prepared once: a job task reads the run's id for each attempt's key. */
  private readonly metaStmt;

  private constructor(
    readonly db: Db,
    private readonly release: () => void,
    private readonly readOnly = false,
  ) {
    this.attempts = new Attempts(db);
    this.outputFiles = new OutputFiles(db);
    this.publications = new Publications(db);
    this.webCopies = new WebCopies(db);
    this.accounting = new Accounting(db);
    this.lifecycle = new Lifecycle(db, this.attempts, this.accounting, this.outputFiles);
    this.gates = new Gates(db, this.lifecycle);
    this.reviews = new Reviews(db);
    this.reviewQueries = new ReviewQueries(db);
    this.counters = new Counters(db);
    this.metrics = new MetricsQueries(db);
    this.items = new Items(db, this.lifecycle);
    this.decisions = new Decisions(db, this.reviews, this.gates, this.items);
    this.itemSync = new ItemSyncer(db, this.lifecycle, this.gates);
    this.queue = new ReadyQueue(db);
    this.itemReports = new ItemReports(db);
    this.uploads = new Uploads(db);
    this.runs = new Runs(db);
    this.steering = new Steering(db);
    this.metaStmt = db.prepare<[string], { value: string }>('SELECT value FROM meta WHERE key = ?');
  }

  /** Opens for writing: takes the lock first, so a second process is refused before touching anything. */
  static open(path: string): Store {
    try {
      makeFolderSync(dirname(path));
    } catch (error) {
      throw new StateFileError(
        `cannot create the state directory ${dirname(path)}: ${(error as NodeJS.ErrnoException).code ?? error}`,
        { cause: error },
      );
    }
    const release = acquireLock(path);
    try {
      const store = new Store(openDb(path), release);
      // Keep the WAL bounded on long runs.
      store.checkpointTimer = setInterval(() => store.db.pragma('wal_checkpoint(PASSIVE)'), 60_000);
      store.checkpointTimer.unref();
      return store;
    } catch (error) {
      release();
      throw error;
    }
  }

  /** A state with nothing in it, in memory: what a manifest that never ran reads as. */
  static empty(): Store {
    return new Store(openDb(':memory:'), () => {}, true);
  }

  /**
   * Opens for reading only (status, report): no lock, nothing written, so a
   * live run's state is never touched. A file of an older schema is migrated
   * first, under the lock, when no run holds it.
   */
  static openReadOnly(path: string): Store {
    const db = openDbReadOnly(path);
    if (db !== 'older') return new Store(db, () => {}, true);
    if (lockHolder(path)?.alive)
      throw new StateFileError(
        `${path} is being run by an older genbatch (pid ${lockHolder(path)!.pid}); read it once that run ends.`,
      );
    Store.open(path).close();
    const migrated = openDbReadOnly(path);
    if (migrated === 'older') throw new StateFileError(`cannot migrate the state file ${path}`);
    return new Store(migrated, () => {}, true);
  }

  /**
   * Opens to ask the run something (pause, resume, drain): while a run holds
   * the lock, without it (its schema is current: the run migrated it), and
   * only the steering row is written; otherwise with the lock, as a run would.
   */
  static openForSteering(path: string): { store: Store; runPid: number | undefined } {
    const holder = lockHolder(path);
    if (holder?.alive) {
      const db = openDbReadWriteUnlocked(path);
      return { store: new Store(db, () => {}, true), runPid: holder.pid };
    }
    return { store: Store.open(path), runPid: undefined };
  }

  /**
   * Opens for `genbatch review`, which lives long beside any number of runs:
   * never the lock (a run started later must not be refused), only review
   * decisions written, in short transactions. An older schema is migrated
   * first, under the lock, when no run holds it.
   */
  static openForReview(path: string): Store {
    const probe = openDbReadOnly(path);
    if (probe === 'older') {
      if (lockHolder(path)?.alive)
        throw new StateFileError(
          `${path} is being run by an older genbatch (pid ${lockHolder(path)!.pid}); review it once that run ends.`,
        );
      Store.open(path).close();
    } else probe.close();
    return new Store(openDbReadWriteUnlocked(path), () => {}, true);
  }

  /** A consistent backup of the whole state at `path`, taken while runs and reviewers write (SQLite's online backup). */
  async backupTo(path: string): Promise<void> {
    await this.db.backup(path);
  }

  /** Changes whenever anything was committed, by this connection or another: whether a new snapshot is owed. */
  changeMark(): string {
    const other = this.db.pragma('data_version', { simple: true }) as number;
    const own = (this.db.prepare('SELECT total_changes() AS n').get() as { n: number }).n;
    return `${other}:${own}`;
  }

  /** Why a state file (a snapshot being restored) cannot be used, or undefined when SQLite finds it whole. */
  static damage(path: string): string | undefined {
    try {
      const db = openSqlite(path, { readonly: true, fileMustExist: true });
      try {
        const check = db.pragma('quick_check', { simple: true });
        return check === 'ok' ? undefined : `SQLite finds it damaged (${String(check)})`;
      } finally {
        db.close();
      }
    } catch (error) {
      return `SQLite cannot read it (${(error as Error).message})`;
    }
  }

  /** Runs `fn` in one short IMMEDIATE transaction. */
  tx<T>(fn: () => T): T {
    return this.db.transaction(fn).immediate();
  }

  meta(key: string): string | undefined {
    return this.metaStmt.get(key)?.value;
  }

  setMeta(key: string, value: string): void {
    this.db
      .prepare('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value')
      .run(key, value);
  }

  deleteMeta(key: string): void {
    this.db.prepare('DELETE FROM meta WHERE key = ?').run(key);
  }

  close(): void {
    clearInterval(this.checkpointTimer);
    try {
      if (!this.readOnly) this.db.pragma('wal_checkpoint(TRUNCATE)');
      this.db.close();
    } finally {
      this.release();
    }
  }
}

export { openDb, type Db };
