import { createRequire } from 'node:module';
import type BetterSqlite3 from 'better-sqlite3';
import { GenbatchError } from '../util/errors.js';

export type Db = BetterSqlite3.Database;
type Driver = typeof BetterSqlite3;

/**
 * The SQLite driver built for the Node that runs: better-sqlite3 13 (Node-API,
 * Node 22 and later) or 12 (Node 20; it aborts on Node 24.19 and later, and 13
 * crashes on 20). package.json lists both as optional dependencies, 12 under
 * an alias, so one lockfile installs on every line: npm skips the one whose
 * `engines` refuse this Node, or whose build fails.
 */
export const DRIVERS = {
  current: 'better-sqlite3',
  node20: 'better-sqlite3-node20',
} as const;

/** The driver names to try on a Node version, best first. */
export function driversFor(nodeVersion: string): string[] {
  const [major = 0, minor = 0] = nodeVersion.replace(/^v/, '').split('.').map(Number);
  if (major < 22) return [DRIVERS.node20];
  // 12 is a fallback only where it does not abort (before 24.19).
  return major > 24 || (major === 24 && minor >= 19) ? [DRIVERS.current] : [DRIVERS.current, DRIVERS.node20];
}

export class SqliteDriverError extends GenbatchError {
  override readonly name = 'SqliteDriverError';
}

let loaded: Driver | undefined;
let loadedName: string | undefined;

/**
 * Which driver this Node loads, and its version: scripts/on-node.sh prints it from the built file.
 * @public
 */
export function loadedDriver(): string {
  driver();
  const require = createRequire(import.meta.url);
  return `${loadedName} ${(require(`${loadedName}/package.json`) as { version: string }).version}`;
}

/** The driver, loaded once, on first use (a command that opens no state never loads it). */
function driver(): Driver {
  if (loaded) return loaded;
  const require = createRequire(import.meta.url);
  const tried: string[] = [];
  for (const name of driversFor(process.versions.node)) {
    try {
      const candidate = require(name) as Driver;
      // Loading the addon is what fails when it was built for another Node.
      new candidate(':memory:').close();
      loaded = candidate;
      loadedName = name;
      return candidate;
    } catch (error) {
      tried.push(`${name}: ${firstLine(error)}`);
    }
  }
  throw new SqliteDriverError(
    `genbatch has no SQLite driver for Node ${process.versions.node} (${tried.join('; ')}). Install it again with this Node (npm ci, or npm install -g genbatch).`,
  );
}

function firstLine(error: unknown): string {
  return String((error as Error)?.message ?? error).split('\n')[0]!;
}

/**
 * Opens a SQLite database with the driver for this Node. Its statements are
 * compiled when first used, not when prepared: a store prepares some 150 it
 * keeps for its life, a command uses a few, and compiling them all took most
 * of an open (6 of 9 ms; a third of the CPU of the item's life property test).
 */
export function openSqlite(path: string, options?: BetterSqlite3.Options): Db {
  const Database = driver();
  const db = new Database(path, options);
  const compile = db.prepare.bind(db);
  // Those not used yet, for compileAll: one used once (a meta write, say) is not held after its use.
  const unused = new Set<LazyStatement>();
  db.prepare = ((source: string) => {
    const statement = new LazyStatement(db, source, (sql) => {
      unused.delete(statement);
      return compile(sql);
    });
    unused.add(statement);
    return statement;
  }) as Db['prepare'];
  compiledAll.set(db, () => {
    for (const statement of [...unused]) statement.compiled();
  });
  return db;
}

const compiledAll = new WeakMap<Db, () => void>();

/**
 * Compiles every statement prepared on `db` and not used yet: a statement with an error is found when the store
 * opens (as a test does), not on the rare path that first uses it.
 */
export function compileAll(db: Db): void {
  compiledAll.get(db)?.();
}

type Statement = BetterSqlite3.Statement<unknown[], unknown>;

/** A statement compiled on its first use, with the modes (pluck, raw, ...) asked for before. */
class LazyStatement {
  private statement: Statement | undefined;
  private readonly modes: ((s: Statement) => void)[] = [];

  constructor(
    readonly database: Db,
    readonly source: string,
    private readonly compile: (source: string) => Statement,
  ) {}

  compiled(): Statement {
    if (this.statement) return this.statement;
    const statement = this.compile(this.source);
    for (const mode of this.modes) mode(statement);
    this.statement = statement;
    return statement;
  }

  private mode(apply: (s: Statement) => void): this {
    if (this.statement) apply(this.statement);
    else this.modes.push(apply);
    return this;
  }

  get reader(): boolean {
    return this.compiled().reader;
  }
  get readonly(): boolean {
    return this.compiled().readonly;
  }
  get busy(): boolean {
    return this.statement?.busy ?? false;
  }
  run(...params: unknown[]) {
    return this.compiled().run(...params);
  }
  get(...params: unknown[]) {
    return this.compiled().get(...params);
  }
  all(...params: unknown[]) {
    return this.compiled().all(...params);
  }
  iterate(...params: unknown[]) {
    return this.compiled().iterate(...params);
  }
  columns() {
    return this.compiled().columns();
  }
  pluck(...on: [boolean?]): this {
    return this.mode((s) => s.pluck(...on));
  }
  expand(...on: [boolean?]): this {
    return this.mode((s) => s.expand(...on));
  }
  raw(...on: [boolean?]): this {
    return this.mode((s) => s.raw(...on));
  }
  safeIntegers(...on: [boolean?]): this {
    return this.mode((s) => s.safeIntegers(...on));
  }
  bind(...params: unknown[]): this {
    return this.mode((s) => s.bind(...params));
  }
}
