import { dirname } from 'node:path';
import { openSqlite, SqliteDriverError, type Db } from './driver.js';
import { APPLICATION_ID, MIGRATIONS, SCHEMA_VERSION } from './migrations/index.js';
import { GenbatchError } from '../util/errors.js';
import { makeFolderSync } from '../util/make-folder.js';

export type { Db } from './driver.js';

export class StateFileError extends GenbatchError {
  override readonly name = 'StateFileError';
}

/** Opens a state a live run holds, to write its steering row alone: the run keeps the file's schema, which must be this genbatch's. */
export function openDbReadWriteUnlocked(path: string): Db {
  let db: Db;
  try {
    db = openSqlite(path, { fileMustExist: true });
    db.pragma('busy_timeout = 5000');
  } catch (error) {
    if (error instanceof SqliteDriverError) throw error;
    throw new StateFileError(`cannot open the state file ${path}: ${(error as Error).message}`, { cause: error });
  }
  const appId = db.pragma('application_id', { simple: true }) as number;
  const version = db.pragma('user_version', { simple: true }) as number;
  if (appId !== APPLICATION_ID || version !== SCHEMA_VERSION) {
    db.close();
    throw new StateFileError(
      appId !== APPLICATION_ID
        ? `${path} is not a genbatch state file (it is another SQLite database). Pass another --state path.`
        : `${path} is held by a run of another genbatch version (state schema ${version}; this one knows ${SCHEMA_VERSION}): use that version's command.`,
    );
  }
  return db;
}

/**
 * Opens a state file to read only, as status and report do while a run may be
 * writing it: nothing is written, migrated or checkpointed. A file of an older
 * schema is opened by openDb instead (migrated) when no run holds it.
 */
export function openDbReadOnly(path: string): Db | 'older' {
  let db: Db;
  try {
    db = openSqlite(path, { readonly: true, fileMustExist: true });
    db.pragma('busy_timeout = 5000');
  } catch (error) {
    if (error instanceof SqliteDriverError) throw error;
    throw new StateFileError(`cannot open the state file ${path}: ${(error as Error).message}`, { cause: error });
  }
  try {
    const appId = db.pragma('application_id', { simple: true }) as number;
    const version = db.pragma('user_version', { simple: true }) as number;
    if (appId !== APPLICATION_ID)
      throw new StateFileError(
        `${path} is not a genbatch state file (it is another SQLite database). Pass another --state path.`,
      );
    if (version > SCHEMA_VERSION)
      throw new StateFileError(
        `${path} was written by a newer genbatch (state schema ${version}; this one knows ${SCHEMA_VERSION}). Upgrade genbatch to read it.`,
      );
    if (version < SCHEMA_VERSION) {
      db.close();
      return 'older';
    }
    return db;
  } catch (error) {
    if (db.open) db.close();
    if (error instanceof StateFileError) throw error;
    throw new StateFileError(`cannot use the state file ${path}: ${(error as Error).message}`);
  }
}

/**
 * Runs `fn` with its commits written to the WAL but not flushed to the disk
 * (synchronous = NORMAL): safe from a crash or a kill, and on a power cut lost
 * only as a suffix of commits. For what is learnt after a request (a job's id,
 * its end, a file saved): the next commit that precedes a paid request is
 * full-synced, which flushes these with it, and a suffix lost before it is
 * redone by a resume without paying (the same idempotency key, a poll, a
 * download). Everything else keeps synchronous = FULL.
 */
export function withRelaxedSync<T>(db: Db, fn: () => T): T {
  if (db.inTransaction) return fn();
  // exec, not a prepared statement: SQLite applies this pragma when it compiles it, so a kept statement would not apply again.
  db.exec('PRAGMA synchronous = NORMAL');
  try {
    return fn();
  } finally {
    db.exec('PRAGMA synchronous = FULL');
  }
}

/**
 * Opens (or creates) a state file: WAL, full sync (a committed idempotency key
 * survives a power cut, not only a kill), a bounded WAL, and the schema migrated.
 */
export function openDb(path: string): Db {
  try {
    makeFolderSync(dirname(path));
  } catch (error) {
    throw new StateFileError(
      `cannot create the state directory ${dirname(path)}: ${(error as NodeJS.ErrnoException).code ?? error}`,
    );
  }
  let db: Db;
  try {
    db = openSqlite(path);
    db.pragma('busy_timeout = 5000');
    db.pragma('journal_mode = WAL');
  } catch (error) {
    throw new StateFileError(
      `cannot open the state file ${path}: ${(error as Error).message}. Is it a SQLite file, and is its directory writable?`,
    );
  }
  try {
    const appId = db.pragma('application_id', { simple: true }) as number;
    const version = db.pragma('user_version', { simple: true }) as number;
    const tables = (db.prepare("SELECT count(*) AS n FROM sqlite_master WHERE type = 'table'").get() as { n: number })
      .n;
    if (appId !== APPLICATION_ID && (appId !== 0 || tables > 0)) {
      throw new StateFileError(
        `${path} is not a genbatch state file (it is another SQLite database). Pass another --state path.`,
      );
    }
    if (version > SCHEMA_VERSION) {
      throw new StateFileError(
        `${path} was written by a newer genbatch (state schema ${version}; this one knows ${SCHEMA_VERSION}). Upgrade genbatch to resume it.`,
      );
    }
    db.pragma('synchronous = FULL');
    db.pragma('journal_size_limit = 8388608');
    db.pragma('foreign_keys = ON');
    // Every pending migration in one transaction: one commit (one fsync) instead of one each, and never half an upgrade.
    if (version < SCHEMA_VERSION) {
      db.transaction(() => {
        for (let v = version; v < SCHEMA_VERSION; v++) db.exec(MIGRATIONS[v]!);
        db.pragma(`user_version = ${SCHEMA_VERSION}`);
        db.pragma(`application_id = ${APPLICATION_ID}`);
      }).immediate();
    }
    return db;
  } catch (error) {
    db.close();
    if (error instanceof StateFileError) throw error;
    throw new StateFileError(`cannot use the state file ${path}: ${(error as Error).message}`);
  }
}
