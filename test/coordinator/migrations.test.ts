import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { COORDINATOR_MIGRATIONS } from '../../src/coordinator/migrations.js';

/**
 * Each released coordinator migration's SQL, by the first 16 hex digits of its sha256: a database that processes
 * already share was migrated by it, so its text never changes. A new migration adds its line.
 */
const RELEASED = ['ae99b9f52e35c42c', '343b05f09c920810'];

const sha = (sql: string) => createHash('sha256').update(sql).digest('hex').slice(0, 16);

describe("the coordinator's schema", () => {
  it('no released migration is edited: each keeps the text shared databases were migrated with', () => {
    expect(COORDINATOR_MIGRATIONS.slice(0, RELEASED.length).map(sha)).toEqual(RELEASED);
    // A new migration is released with its checksum added above.
    expect(COORDINATOR_MIGRATIONS).toHaveLength(RELEASED.length);
  });

  it('the list cannot be changed from code that runs', () => {
    expect(Object.isFrozen(COORDINATOR_MIGRATIONS)).toBe(true);
  });
});
