/**
 * Numbered schema migrations, one frozen file each: each runs once, in
 * order, and every pending one in one transaction; `user_version` records
 * how far a state file has come. A released migration is never edited (a
 * state upgraded by it keeps what it made): its SQL is written out whole,
 * with nothing taken from code that runs today, and test/store/migrations
 * holds its checksum. A change is a new file, added to the end below.
 */
import { sql as m001 } from './001.js';
import { sql as m002 } from './002.js';
import { sql as m003 } from './003.js';
import { sql as m004 } from './004.js';
import { sql as m005 } from './005.js';
import { sql as m006 } from './006.js';
import { sql as m007 } from './007.js';
import { sql as m008 } from './008.js';
import { sql as m009 } from './009.js';
import { sql as m010 } from './010.js';
import { sql as m011 } from './011.js';
import { sql as m012 } from './012.js';
import { sql as m013 } from './013.js';
import { sql as m014 } from './014.js';
import { sql as m015 } from './015.js';
import { sql as m016 } from './016.js';
import { sql as m017 } from './017.js';
import { sql as m018 } from './018.js';
import { sql as m019 } from './019.js';
import { sql as m020 } from './020.js';
import { sql as m021 } from './021.js';
import { sql as m022 } from './022.js';
import { sql as m023 } from './023.js';
import { sql as m024 } from './024.js';
import { sql as m025 } from './025.js';
import { sql as m026 } from './026.js';
import { sql as m027 } from './027.js';
import { sql as m028 } from './028.js';
import { sql as m029 } from './029.js';

export const MIGRATIONS: readonly string[] = [
  m001,
  m002,
  m003,
  m004,
  m005,
  m006,
  m007,
  m008,
  m009,
  m010,
  m011,
  m012,
  m013,
  m014,
  m015,
  m016,
  m017,
  m018,
  m019,
  m020,
  m021,
  m022,
  m023,
  m024,
  m025,
  m026,
  m027,
  m028,
  m029,
];

export const SCHEMA_VERSION = MIGRATIONS.length;
/** Marks a SQLite file as genbatch state (PRAGMA application_id), so a foreign file is refused. */
export const APPLICATION_ID = 0x67656e62; // "genb"
