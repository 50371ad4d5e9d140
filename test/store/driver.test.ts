import { describe, expect, it } from 'vitest';
import { DRIVERS, driversFor, openSqlite } from '../../src/store/driver.js';

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
});
