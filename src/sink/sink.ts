import type { Readable } from 'node:stream';

/**
 * Where verified outputs go, and where the results that describe them are
 * written: one interface, whatever the place is (a folder first). Every
 * reader and writer of outputs (downloads, recovery, the reports, review)
 * goes through it, so that a new place is one new implementation.
 */
export interface OutputSink {
  /** The place as a user names it: a folder's absolute path, a bucket's `s3://BUCKET/PREFIX`. */
  readonly location: string;
  /** A place whose outputs are saved locally first, then published (a bucket): how they are. */
  readonly publishing?: Publishing;
  /** A place that keeps the state beside the outputs (a bucket): its snapshots. */
  readonly snapshots?: StateCopies;
  /** A place whose files are on this machine (a folder): where each is, for a reader that opens it itself. */
  readonly here?: FilesHere;
  /** Proves that files can be written there, before anything is paid for: the problem, or undefined. */
  probe(): Promise<SinkProblem | undefined>;
  /** The owner marker at the top of the place (see owner.ts: who may write here, and who holds it now); undefined when none. */
  readMarker(): Promise<string | undefined>;
  /** The owner marker written whole, in place of the one there. */
  writeMarker(text: string): Promise<void>;
  /**
   * A file under `relPath`, written to a temporary and put in place whole by
   * its commit. An output is put in place only where nothing else is
   * (`mode: 'new'`), unless what is there is an earlier copy of the same
   * output (`'replace'`); the results and the gallery replace theirs.
   * `output`: a paid output (a place that publishes saves it locally first).
   */
  create(
    relPath: string,
    mode: 'new' | 'replace',
    options?: { durable?: boolean; output?: boolean },
  ): Promise<SinkWriter>;
  /** What is there now of an output as it was verified. */
  check(recorded: RecordedOutput): Promise<OutputCheck>;
  /** A file to read (the whole, or a byte range of it for a video's scrubbing); undefined when it is not there or not inside. */
  open(relPath: string): Promise<OpenedFile | undefined>;
  /** A path on this machine where the file can be read (an input uploaded from an earlier item's output), if there is one. */
  localFile(relPath: string): Promise<string | undefined>;
  /** Removes what a killed run left half-written (temporaries, probes). */
  cleanUp(): Promise<void>;
  /** Lets go of what it holds (a bucket's connections): its opener closes it once, when done with it. */
  close(): Promise<void>;
}

/** Where the files of a place on this machine are. */
export interface FilesHere {
  /** The file's path here, inside the place, whether it is there yet or not. */
  pathOf(relPath: string): string;
  /** The file's real path, when it is there and inside the place. */
  fileOf(relPath: string): Promise<string | undefined>;
}

/** A file being written: bytes in, then put in place whole (commit) or dropped (abort). */
export interface SinkWriter {
  /** Where the file will be, as the sink names it (for messages). */
  readonly location: string;
  write(data: string | Uint8Array | readonly Uint8Array[]): Promise<void>;
  /**
   * Puts the file in place. `expected` (its byte count and sha256, as the
   * writer counted them) is what the place must hold once it is done; a new
   * output whose name is held by other bytes is refused (OutputExistsError).
   * Resolves with the file's modification time (ms, whole).
   */
  commit(expected?: { bytes: number; sha256: string }): Promise<number>;
  abort(): Promise<void>;
}

/** An output as recorded when it was verified. */
export interface RecordedOutput {
  path: string;
  bytes: number;
  sha256: string;
  mtime_ms: number | null;
  /** Verified in the bucket it was published to (its local file may be gone). */
  published?: boolean;
}

/** An output saved and verified locally, to be published. */
export interface StagedOutput {
  path: string;
  bytes: number;
  sha256: string;
  contentType: string | null;
}

/**
 * How a place that publishes does it: each output saved locally (staged),
 * then published and verified there, and only then its local file dropped.
 */
export interface Publishing {
  /** The place (`s3://BUCKET/PREFIX`). */
  readonly location: string;
  /** The folder where outputs wait to be published. */
  readonly staging: string;
  /** The URL an output's object has once published. */
  urlOf(relPath: string): string;
  /** Puts the staged output there, create-only, and verifies it: resolves with its URL. */
  publish(out: StagedOutput, signal?: AbortSignal): Promise<string>;
  /**
   * Removes the staged file (kept with --keep-local): called once the object
   * is verified in the bucket, before the publication is recorded (a kill
   * between the two leaves an object the next run recognises by its HEAD).
   */
  dropLocal(relPath: string): Promise<void>;
  /** Whether a file waits in the staging folder under `relPath`. */
  isStaged(relPath: string): boolean;
  /** While the bucket answers nothing but faults: since when, and when its calls give up. */
  readonly trouble: BucketTrouble | undefined;
  /** Hears the bucket's trouble begin (and each fault in it) and end (undefined). */
  watch(listener: (trouble: BucketTrouble | undefined) => void): () => void;
  /** Every bucket call under way or to come fails at once with `why` (an interrupt's end the bucket did not answer in time). */
  abandon(why: string): void;
  /** Whether the calls were abandoned: what they owed is the next run's. */
  readonly abandoned: boolean;
}

export type OutputCheck =
  | { verdict: 'unchanged' }
  /** Touched since (its modification time moved) but still the same bytes. */
  | { verdict: 'same-bytes'; mtimeMs: number }
  | { verdict: 'missing' | 'resized' | 'altered' };

/** The bucket has answered nothing but faults since `since` (the last one: `code`); its calls give up at `givesUpAt`. */
export interface BucketTrouble {
  since: number;
  givesUpAt: number;
  code: string;
}

export interface ByteRange {
  start: number;
  end: number;
}

export interface OpenedFile {
  size: number;
  /** The whole file, or the range asked for. */
  read(range?: ByteRange): Readable;
}

/** Why outputs cannot be written: a file system's or a bucket's code, and what to tell the user. */
export interface SinkProblem {
  code: string;
  message: string;
}

/** Whose outputs a place holds: a run (its identity, and its state file where it ran), real or a rehearsal. */
export interface OutputsOwner {
  state: string;
  runId: string;
  rehearsal: boolean;
  /** The manifest the run is made from: its path where it ran, and its bytes' sha256. */
  manifest?: { path: string; sha256: string };
  /** The process that holds the place now, until its lease lapses (renewed while it runs). */
  holder?: OutputsHolder;
}

/** A process holding a place: which, since when, and until when unless it renews its lease (0: given up). */
export interface OutputsHolder {
  host: string;
  pid: number;
  since: number;
  until: number;
}

/** What a state gives a snapshot: a consistent backup of itself, and a mark that changes with every commit. */
export interface Snapshotable {
  backupTo(path: string): Promise<void>;
  changeMark(): string;
}

/** A snapshot taken: where it went, how big it is, how long it took. */
export interface TakenSnapshot {
  key: string;
  bytes: number;
  ms: number;
}

/** A state's snapshots beside the outputs (see bucket/state-snapshots.ts). */
export interface StateCopies {
  take(state: Snapshotable, now?: () => number): Promise<TakenSnapshot>;
  /** The newest whole snapshot put where the state goes; undefined when none was taken. */
  restore(
    damaged: (path: string) => string | undefined,
  ): Promise<{ key: string; takenAt: number; skipped: string[] } | undefined>;
}
