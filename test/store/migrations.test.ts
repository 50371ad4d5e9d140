import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openDb } from '../../src/store/db.js';
import { openSqlite } from '../../src/store/driver.js';
import { JOB_SECONDS_BUCKETS } from '../../src/store/job-seconds.js';
import { APPLICATION_ID, MIGRATIONS, SCHEMA_VERSION } from '../../src/store/migrations/index.js';
import { searchText } from '../../src/store/search-text.js';

/**
 * Each released migration's SQL, by the first 16 hex digits of its sha256: a state upgraded by it keeps what it
 * made, so its text never changes. A new migration adds its line.
 */
const RELEASED = [
  '2a2dcb4070b02863',
  'c89562b8d94f43a1',
  '6803c9744bd99a7f',
  '2a21a2a05ea0b551',
  '254f0c0f29a1d10a',
  'f6e25d8decc728cc',
  '6f17b9db45c2d5ed',
  '2320260b048b564d',
  '6879d3cba1b3778b',
  'b22f1041e14fc97d',
  'c7463a08da33647d',
  'f53a4d3578be512f',
  '6206aaf33f63ccd3',
  'f262582325431eb7',
  '02a9f27d7375c37d',
  '34fa03977f7c3707',
  '8913badbf780b202',
  '0a8973cc9b3c48bb',
  'b8967d67da1bda46',
  '237b5c3695a3bad3',
  '5be1e5dbc3661204',
  '3b90dd73b091da8a',
  'ea07ed831acc266f',
  '65f3b1cfe5985c00',
  '01052ae65ed4d102',
  'fc2f2bca0e6b2fb9',
  'a09ad8ad61874815',
  'd8b8357ea6afd4cb',
  '6af8c52bbd6bf9f3',
];

/** A state as the genbatch of schema `version` made it, kept gzipped (test/fixtures/states/make.mjs wrote it once). */
const fixtureOf = (version: number) =>
  join(import.meta.dirname, '..', 'fixtures', 'states', `v${String(version).padStart(3, '0')}.sqlite.gz`);

const sha = (sql: string) => createHash('sha256').update(sql).digest('hex').slice(0, 16);

/** The schema as SQLite keeps it: every table, index, trigger and view with its SQL, whitespace made one space. */
function schemaOf(path: string): string[] {
  const db = openSqlite(path);
  try {
    const rows = db
      .prepare("SELECT type, name, tbl_name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name")
      .all() as { type: string; name: string; tbl_name: string; sql: string | null }[];
    return rows.map((r) => `${r.type} ${r.name} on ${r.tbl_name}: ${(r.sql ?? '').replace(/\s+/g, ' ').trim()}`);
  } finally {
    db.close();
  }
}

/** A state as a genbatch of schema `version` left it: its first `version` migrations, nothing after. */
function stateAt(version: number): string {
  const path = join(mkdtempSync(join(tmpdir(), 'genbatch-migrations-')), 's.sqlite');
  const db = openSqlite(path);
  db.transaction(() => {
    for (let v = 0; v < version; v++) db.exec(MIGRATIONS[v]!);
    db.pragma(`user_version = ${version}`);
    if (version > 0) db.pragma(`application_id = ${APPLICATION_ID}`);
  })();
  db.close();
  return path;
}

describe('the state schema', () => {
  it('no released migration is edited: each keeps the text states were upgraded with', () => {
    expect(MIGRATIONS.slice(0, RELEASED.length).map(sha)).toEqual(RELEASED);
    // A new migration is released with its checksum added above.
    expect(MIGRATIONS).toHaveLength(RELEASED.length);
  });

  it("a state each earlier version made, as it made it, upgrades to a fresh state's schema", () => {
    const fresh = stateAt(0);
    openDb(fresh).close();
    const expected = schemaOf(fresh);
    expect(expected.length).toBeGreaterThan(40);
    // Every version, this one included, has its state kept: the next migration is tested against what this one made.
    for (let version = 1; version <= SCHEMA_VERSION; version++) expect(existsSync(fixtureOf(version))).toBe(true);
    for (let version = 1; version < SCHEMA_VERSION; version++) {
      const old = join(mkdtempSync(join(tmpdir(), 'genbatch-migrations-')), 's.sqlite');
      writeFileSync(old, gunzipSync(readFileSync(fixtureOf(version))));
      const db = openDb(old);
      expect(db.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
      db.close();
      expect(schemaOf(old), `upgraded from schema ${version}`).toEqual(expected);
    }
  });

  it('the kept states are what their versions made: each holds its own schema version', () => {
    for (let version = 1; version <= SCHEMA_VERSION; version++) {
      const path = join(mkdtempSync(join(tmpdir(), 'genbatch-fixture-')), 's.sqlite');
      writeFileSync(path, gunzipSync(readFileSync(fixtureOf(version))));
      const kept = openSqlite(path, { readonly: true });
      try {
        expect(kept.pragma('user_version', { simple: true }), fixtureOf(version)).toBe(version);
        expect(kept.pragma('application_id', { simple: true })).toBe(APPLICATION_ID);
      } finally {
        kept.close();
      }
    }
  });

  it('what runs today reads what the frozen migrations made: the search text and the run time buckets', () => {
    const search = MIGRATIONS[24]!;
    // The index is built from every item's text and kept by a trigger from each new one: a scan must read the same.
    expect(search).toContain(`SELECT rowid, ${searchText('')} FROM items`);
    expect(search).toContain(`VALUES (new.rowid, ${searchText('new.')})`);
    const histogram = MIGRATIONS[22]!;
    const cases = JOB_SECONDS_BUCKETS.map((le) => `WHEN d <= ${le} THEN ${le}`).join(' ');
    expect(histogram).toContain(`CASE ${cases} ELSE 9e999 END`);
  });
});
