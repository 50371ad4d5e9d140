import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { compileAll, DRIVERS, driversFor, openSqlite } from '../../src/store/driver.js';
import { Store } from '../../src/store/index.js';

describe('the SQLite driver for the Node that runs', () => {
  it('is 12 on Node 20, 13 from 22 on, and never 12 where it aborts (24.19 and later)', () => {
    expect(driversFor('v20.20.2')).toEqual([DRIVERS.node20]);
    expect(driversFor('22.12.0')).toEqual([DRIVERS.current, DRIVERS.node20]);
    expect(driversFor('24.18.0')).toEqual([DRIVERS.current, DRIVERS.node20]);
    expect(driversFor('24.19.0')).toEqual([DRIVERS.current]);
    expect(driversFor('26.10.0')).toEqual([DRIVERS.current]);
  });

  it('opens a database on this Node', () => {
    const db = openSqlite(':memory:');
    expect(db.prepare('SELECT 1 + 1 AS n').get()).toEqual({ n: 2 });
    db.close();
  });

  it('compiles a statement when it is first used, with the modes asked for before', () => {
    const db = openSqlite(':memory:');
    db.exec('CREATE TABLE t (n INTEGER)');
    const count = db.prepare('SELECT count(*) FROM t').pluck();
    const broken = db.prepare('SELECT n FROM nowhere');
    db.prepare('INSERT INTO t VALUES (?)').run(7);
    expect(count.get()).toBe(1);
    expect(db.prepare('SELECT n FROM t').raw().all()).toEqual([[7]]);
    expect(db.prepare('SELECT n FROM t').pluck().pluck(false).get()).toEqual({ n: 7 });
    expect(() => broken.get()).toThrow(/no such table: nowhere/);
    // compileAll compiles what was never used: a statement used once is not held for it (a meta write each second
    // of an overnight run would be).
    expect(() => compileAll(db)).not.toThrow();
    db.prepare('SELECT n FROM elsewhere');
    expect(() => compileAll(db)).toThrow(/no such table: elsewhere/);
    db.close();
  });

  it('compiles every statement a store keeps, read-write and read-only: none has an error waiting on a rare path', () => {
    const path = join(mkdtempSync(join(tmpdir(), 'genbatch-driver-')), 's.sqlite');
    const store = Store.open(path);
    expect(() => compileAll(store.db)).not.toThrow();
    store.close();
    const readOnly = Store.openReadOnly(path);
    expect(() => compileAll(readOnly.db)).not.toThrow();
    readOnly.close();
  });
});
