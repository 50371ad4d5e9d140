/**
 * Numbered schema migrations. Each runs once, in order, in one transaction;
 * `user_version` records how far a state file has come.
 */
/**
 * The upper bounds (seconds) of the job run time histogram: images take about 50 s and videos about 5.5 min at
 * the service, a rehearsal's far less. Migration 23 files each ended job under the first bound it fits (the
 * histogram's buckets are cumulative only when served); changing them takes a migration of its own.
 */
export const JOB_SECONDS_BUCKETS = [1, 2.5, 5, 10, 20, 30, 45, 60, 90, 120, 180, 300, 450, 600, 900, 1800] as const;

/** The SQL that files a duration in seconds under its bucket's bound (9e999 is +Inf). */
function bucketOf(seconds: string): string {
  return `CASE ${JOB_SECONDS_BUCKETS.map((le) => `WHEN ${seconds} <= ${le} THEN ${le}`).join(' ')} ELSE 9e999 END`;
}

export const MIGRATIONS: readonly string[] = [
  /* 1 */ `
  CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);

  -- The item is a row with a life: state, attempt, last error, next time to act.
  CREATE TABLE items (
    id TEXT PRIMARY KEY,
    seq INTEGER NOT NULL,
    type TEXT NOT NULL,
    model TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    spec TEXT NOT NULL,
    state TEXT NOT NULL,
    attempt INTEGER NOT NULL DEFAULT 0,
    changed INTEGER NOT NULL DEFAULT 0,
    error_code TEXT,
    error_message TEXT,
    not_before INTEGER NOT NULL DEFAULT 0,
    updated_at INTEGER NOT NULL
  );
  CREATE INDEX items_state ON items (state, type, seq);

  -- One row per submission attempt; its key is committed before the request leaves.
  CREATE TABLE attempts (
    item_id TEXT NOT NULL REFERENCES items (id),
    n INTEGER NOT NULL,
    idempotency_key TEXT NOT NULL UNIQUE,
    body TEXT NOT NULL,
    status TEXT NOT NULL,
    job_id TEXT,
    charged INTEGER NOT NULL DEFAULT 0,
    refunded INTEGER NOT NULL DEFAULT 0,
    error_code TEXT,
    error_message TEXT,
    created_at INTEGER NOT NULL,
    sent_at INTEGER,
    accepted_at INTEGER,
    ended_at INTEGER,
    PRIMARY KEY (item_id, n)
  );
  CREATE INDEX attempts_job ON attempts (job_id);

  CREATE TABLE outputs (
    job_id TEXT NOT NULL,
    idx INTEGER NOT NULL,
    item_id TEXT NOT NULL REFERENCES items (id),
    path TEXT,
    bytes INTEGER,
    sha256 TEXT,
    content_type TEXT,
    link_issued_at INTEGER,
    downloaded_at INTEGER,
    PRIMARY KEY (job_id, idx)
  );

  -- When submissions were sent: read back to pace the first submissions after a restart.
  CREATE TABLE submissions (at INTEGER NOT NULL);
  -- Credits per key day, for the daily cap.
  CREATE TABLE daily_credits (day INTEGER PRIMARY KEY, charged INTEGER NOT NULL DEFAULT 0, refunded INTEGER NOT NULL DEFAULT 0);
  -- Blocked submissions, for the moderation circuit breaker's trailing 7 days.
  CREATE TABLE blocks (at INTEGER NOT NULL, item_id TEXT NOT NULL);
  -- Uploaded inputs, reused for the same bytes and target while still valid.
  CREATE TABLE uploads (
    sha256 TEXT NOT NULL,
    target TEXT NOT NULL,
    kind TEXT NOT NULL,
    content_type TEXT NOT NULL,
    size INTEGER NOT NULL,
    key TEXT NOT NULL,
    expires_at INTEGER,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (sha256, target)
  );
  `,
  /* 2: a grant is recorded before its PUT, so a resumed run re-PUTs to it instead of uploading anew */ `
  ALTER TABLE uploads ADD COLUMN upload_url TEXT;
  ALTER TABLE uploads ADD COLUMN confirmed INTEGER NOT NULL DEFAULT 1;
  `,
  /* 3: run sessions, so status and the report can tell run time, whether a run is alive, and an ETA; outputs indexed by item */ `
  CREATE TABLE runs (
    id INTEGER PRIMARY KEY,
    started_at INTEGER NOT NULL,
    -- Last sign of life: a killed run never sets ended_at.
    heartbeat_at INTEGER NOT NULL,
    ended_at INTEGER,
    -- The key's limits and time scale the run paces to (JSON), for an ETA from limits.
    limits TEXT NOT NULL,
    time_scale REAL NOT NULL DEFAULT 1,
    -- Where its outputs went, so report finds them without --out.
    out_dir TEXT NOT NULL,
    -- Submissions wait for the daily cap (or a DAILY_CAP_REACHED pause) until then.
    waiting_until INTEGER
  );
  -- Outputs by item: resume checks every done item's files, the report lists them.
  CREATE INDEX outputs_item ON outputs (item_id);
  `,
  /* 4: what each item waits for, so the feeder asks SQLite for ready items instead of scanning pending ones */ `
  CREATE TABLE deps (
    item_id TEXT NOT NULL,
    dep_id TEXT NOT NULL,
    PRIMARY KEY (item_id, dep_id)
  );
  CREATE INDEX deps_dep ON deps (dep_id);
  -- Which output owns a file: a download never overwrites another item's paid output.
  CREATE INDEX outputs_path ON outputs (path);
  `,
  /* 5: resends of an attempt waiting for their time without holding an in-flight slot (items.not_before): counted across tasks and runs */ `
  ALTER TABLE attempts ADD COLUMN resends INTEGER NOT NULL DEFAULT 0;
  `,
  /* 6: each output's modification time when verified, so a resume rehashes only the files that changed since */ `
  ALTER TABLE outputs ADD COLUMN mtime_ms INTEGER;
  `,
  /* 7: running tallies kept by triggers, so the live line, the ETA and the budget read a few rows instead of scanning 100,000 items and their attempts */ `
  CREATE TABLE item_tally (
    type TEXT NOT NULL,
    state TEXT NOT NULL,
    -- 1 once the item was ever submitted (attempt > 0)
    attempted INTEGER NOT NULL,
    n INTEGER NOT NULL,
    PRIMARY KEY (type, state, attempted)
  ) WITHOUT ROWID;
  INSERT INTO item_tally SELECT type, state, attempt > 0, count(*) FROM items GROUP BY 1, 2, 3;
  CREATE TRIGGER item_tally_insert AFTER INSERT ON items BEGIN
    INSERT INTO item_tally VALUES (new.type, new.state, new.attempt > 0, 1) ON CONFLICT DO UPDATE SET n = n + 1;
  END;
  CREATE TRIGGER item_tally_update AFTER UPDATE OF type, state, attempt ON items
    WHEN old.type IS NOT new.type OR old.state IS NOT new.state OR (old.attempt > 0) IS NOT (new.attempt > 0) BEGIN
    UPDATE item_tally SET n = n - 1 WHERE type = old.type AND state = old.state AND attempted = (old.attempt > 0);
    INSERT INTO item_tally VALUES (new.type, new.state, new.attempt > 0, 1) ON CONFLICT DO UPDATE SET n = n + 1;
  END;
  CREATE TRIGGER item_tally_delete AFTER DELETE ON items BEGIN
    UPDATE item_tally SET n = n - 1 WHERE type = old.type AND state = old.state AND attempted = (old.attempt > 0);
  END;

  CREATE TABLE attempt_totals (id INTEGER PRIMARY KEY CHECK (id = 1), charged INTEGER NOT NULL, refunded INTEGER NOT NULL);
  INSERT INTO attempt_totals SELECT 1, coalesce(sum(charged), 0), coalesce(sum(refunded), 0) FROM attempts;
  CREATE TRIGGER attempt_totals_insert AFTER INSERT ON attempts BEGIN
    UPDATE attempt_totals SET charged = charged + new.charged, refunded = refunded + new.refunded;
  END;
  CREATE TRIGGER attempt_totals_update AFTER UPDATE OF charged, refunded ON attempts BEGIN
    UPDATE attempt_totals SET charged = charged - old.charged + new.charged, refunded = refunded - old.refunded + new.refunded;
  END;
  CREATE TRIGGER attempt_totals_delete AFTER DELETE ON attempts BEGIN
    UPDATE attempt_totals SET charged = charged - old.charged, refunded = refunded - old.refunded;
  END;

  -- Items finished since a run started, for the ETA's observed pace: a range of the index, not a scan.
  CREATE INDEX items_finished ON items (state, updated_at);
  `,
  // 8
  `
  -- Items that wait for their time (a backoff): the feeder asks for the earliest on every pick, and
  -- through items_state that scanned every pending item of the type (100,000 in a big catalog).
  CREATE INDEX items_due ON items (state, type, not_before) WHERE not_before > 0;
  `,
  // 9
  `
  -- Items the manifest no longer has: never started, not counted in progress; a job already paid for still finishes.
  ALTER TABLE items ADD COLUMN removed INTEGER NOT NULL DEFAULT 0;
  CREATE INDEX items_removed ON items (state) WHERE removed = 1;
  `,
  // 10
  `
  -- The report reads the items in manifest order a page at a time (a 100,000-item report held whole took 70 MB).
  CREATE INDEX items_seq ON items (seq);
  `,
  // 11
  `
  -- Items are inserted only by a sync, which counts them into the tally once per type: the per-row
  -- trigger doubled the cost of writing a 100,000-row catalog (0.9 s to 1.9 s).
  DROP TRIGGER item_tally_insert;
  `,
  // 12
  `
  -- The API key an attempt was sent with, by its fingerprint (never the key): its resends and polls use that key
  -- alone, since the service may scope an idempotency key to its API key (another key's resend could pay twice).
  ALTER TABLE attempts ADD COLUMN key_fp TEXT;
  `,
  // 13
  `
  -- Several keys: each paces its own submissions, keeps its own daily cap and its own uploads (an upload
  -- key may be usable only by the API key it was granted to). Rows from before are the key '' (unknown),
  -- which every key's cap counts: never under-counted.
  ALTER TABLE submissions ADD COLUMN key_fp TEXT NOT NULL DEFAULT '';
  CREATE INDEX submissions_at ON submissions (at);
  CREATE TABLE key_day_credits (
    key_fp TEXT NOT NULL,
    day INTEGER NOT NULL,
    charged INTEGER NOT NULL DEFAULT 0,
    refunded INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (key_fp, day)
  ) WITHOUT ROWID;
  INSERT INTO key_day_credits SELECT '', day, charged, refunded FROM daily_credits;
  DROP TABLE daily_credits;
  CREATE TABLE key_uploads (
    key_fp TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    target TEXT NOT NULL,
    kind TEXT NOT NULL,
    content_type TEXT NOT NULL,
    size INTEGER NOT NULL,
    key TEXT NOT NULL,
    expires_at INTEGER,
    created_at INTEGER NOT NULL,
    upload_url TEXT,
    confirmed INTEGER NOT NULL DEFAULT 1,
    PRIMARY KEY (key_fp, sha256, target)
  );
  INSERT INTO key_uploads SELECT '', sha256, target, kind, content_type, size, key, expires_at, created_at, upload_url, confirmed FROM uploads;
  DROP TABLE uploads;
  ALTER TABLE key_uploads RENAME TO uploads;
  `,
  // 14
  `
  -- Items a sync found changed since they were sent: every run asks for them, and without this it read all
  -- 100,000 rows of a big catalog to find none.
  CREATE INDEX items_changed ON items (seq) WHERE changed = 1;
  `,
  // 15
  `
  -- Since when the service has answered nothing, while a run waits for it: status says why a run is quiet.
  ALTER TABLE runs ADD COLUMN unreachable_since INTEGER;
  -- The one retry a 503 allows, counted apart from the resends after no answer (which must not use it up).
  ALTER TABLE attempts ADD COLUMN unavailable_resends INTEGER NOT NULL DEFAULT 0;
  `,
  // 16
  `
  -- Ready items go higher priority first, then in manifest order: the feeder reads them in this index's order,
  -- keyset-paged on (rank, seq) with rank = -priority, so that a page after items a run holds is one seek.
  ALTER TABLE items ADD COLUMN priority INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE items ADD COLUMN rank INTEGER NOT NULL DEFAULT 0;
  CREATE INDEX items_ready ON items (state, type, rank, seq);
  -- The items that have tags (in their spec): status counts per tag without reading every item's spec.
  CREATE INDEX items_tagged ON items (seq) WHERE spec -> '$.tags' IS NOT NULL;
  `,
  // 17
  `
  -- Failed uploads of an item's inputs: each defers it, the fifth ends it, and a resumed run goes on counting.
  -- On the item, not an attempt: an attempt is made only once its inputs are uploaded.
  ALTER TABLE items ADD COLUMN upload_failures INTEGER NOT NULL DEFAULT 0;
  `,
  // 18
  `
  -- Paid outputs are never overwritten: a regenerated item's new job saves version 2 beside version 1, and the
  -- earlier job's rows stay, marked superseded, so the results list every version and say which is current.
  ALTER TABLE outputs ADD COLUMN version INTEGER NOT NULL DEFAULT 1;
  ALTER TABLE outputs ADD COLUMN superseded_at INTEGER;
  `,
  // 19
  `
  -- Review decisions (genbatch review): one per version of an item's outputs, kept across regenerations.
  CREATE TABLE reviews (
    item_id TEXT NOT NULL,
    version INTEGER NOT NULL,
    decision TEXT NOT NULL CHECK (decision IN ('approved', 'rejected')),
    note TEXT,
    decided_at INTEGER NOT NULL,
    PRIMARY KEY (item_id, version)
  );
  -- The outputs of an item's version, found by (item, version) when a review joins its current one.
  CREATE INDEX outputs_item_version ON outputs (item_id, version);
  -- The review app's live view asks for the outputs downloaded since it last looked.
  CREATE INDEX outputs_downloaded ON outputs (downloaded_at) WHERE downloaded_at IS NOT NULL;
  `,
  // 20
  `
  -- Transfers that went silent (status names them while the run waits for them), and the idle timeout that ends each.
  ALTER TABLE runs ADD COLUMN stalled_transfers INTEGER;
  ALTER TABLE runs ADD COLUMN stalled_since INTEGER;
  ALTER TABLE runs ADD COLUMN idle_timeout_ms INTEGER;
  `,
  // 21
  `
  -- Outputs published to a bucket (--out s3://...): verified there, then recorded, and only then is the local copy
  -- removed. An output saved but not published waits in the staging folder for this run or the next one.
  ALTER TABLE outputs ADD COLUMN published_at INTEGER;
  ALTER TABLE outputs ADD COLUMN published_to TEXT;
  ALTER TABLE outputs ADD COLUMN publish_error TEXT;
  CREATE INDEX outputs_unpublished ON outputs (downloaded_at) WHERE published_at IS NULL AND sha256 IS NOT NULL;
  `,
  // 22
  `
  -- Web copies of image outputs (derivatives): made once the output is verified, each recorded as written, so a
  -- resumed run makes only the missing ones. The original output is never modified.
  CREATE TABLE derivatives (
    job_id TEXT NOT NULL,
    idx INTEGER NOT NULL,
    path TEXT NOT NULL,
    format TEXT NOT NULL,
    width INTEGER NOT NULL,
    height INTEGER NOT NULL,
    bytes INTEGER NOT NULL,
    sha256 TEXT NOT NULL,
    made_at INTEGER NOT NULL,
    PRIMARY KEY (job_id, idx, path)
  );
  -- The review server serves a copy only when its path is recorded.
  CREATE INDEX derivatives_path ON derivatives (path);
  -- Who took a review decision: a person (genbatch review), or the manifest's checks (a flat image, a wrong size).
  ALTER TABLE reviews ADD COLUMN by TEXT NOT NULL DEFAULT 'person';
  `,
  // 23
  `
  -- What a run counts as it goes and the state does not hold otherwise (submissions sent, 429s by code, download
  -- failures, seconds of outages and of stalled transfers), added up across runs and processes: genbatch metrics.
  CREATE TABLE counters (
    name TEXT NOT NULL,
    key_fp TEXT NOT NULL DEFAULT '',
    label TEXT NOT NULL DEFAULT '',
    value REAL NOT NULL DEFAULT 0,
    PRIMARY KEY (name, key_fp, label)
  ) WITHOUT ROWID;

  -- Credits per key and per tag, and ended jobs' run times per type and bucket, kept by triggers in the same
  -- transaction as the attempt's own write: a scrape of 100,000 items reads a few rows, not every attempt and spec.
  -- A tag's credits are those charged while the item carried it.
  CREATE TABLE key_credits (key_fp TEXT PRIMARY KEY, charged INTEGER NOT NULL, refunded INTEGER NOT NULL) WITHOUT ROWID;
  INSERT INTO key_credits SELECT coalesce(key_fp, ''), sum(charged), sum(refunded) FROM attempts GROUP BY 1;
  CREATE TABLE tag_credits (tag TEXT PRIMARY KEY, charged INTEGER NOT NULL, refunded INTEGER NOT NULL) WITHOUT ROWID;
  INSERT INTO tag_credits
    SELECT j.value, sum(a.charged), sum(a.refunded)
    FROM attempts a JOIN items i ON i.id = a.item_id, json_each(i.spec, '$.tags') j
    WHERE i.spec -> '$.tags' IS NOT NULL GROUP BY 1;
  CREATE TRIGGER credits_insert AFTER INSERT ON attempts WHEN new.charged != 0 OR new.refunded != 0 BEGIN
    INSERT INTO key_credits VALUES (coalesce(new.key_fp, ''), new.charged, new.refunded)
      ON CONFLICT DO UPDATE SET charged = charged + excluded.charged, refunded = refunded + excluded.refunded;
    INSERT INTO tag_credits SELECT j.value, new.charged, new.refunded FROM items i, json_each(i.spec, '$.tags') j
      WHERE i.id = new.item_id
      ON CONFLICT DO UPDATE SET charged = charged + excluded.charged, refunded = refunded + excluded.refunded;
  END;
  CREATE TRIGGER credits_update AFTER UPDATE OF charged, refunded, key_fp ON attempts
    WHEN old.charged != new.charged OR old.refunded != new.refunded OR old.key_fp IS NOT new.key_fp BEGIN
    UPDATE key_credits SET charged = charged - old.charged, refunded = refunded - old.refunded
      WHERE key_fp = coalesce(old.key_fp, '');
    INSERT INTO key_credits VALUES (coalesce(new.key_fp, ''), new.charged, new.refunded)
      ON CONFLICT DO UPDATE SET charged = charged + excluded.charged, refunded = refunded + excluded.refunded;
    INSERT INTO tag_credits
      SELECT j.value, new.charged - old.charged, new.refunded - old.refunded FROM items i, json_each(i.spec, '$.tags') j
      WHERE i.id = new.item_id
      ON CONFLICT DO UPDATE SET charged = charged + excluded.charged, refunded = refunded + excluded.refunded;
  END;

  CREATE TABLE job_seconds (type TEXT NOT NULL, le REAL NOT NULL, n INTEGER NOT NULL, sum REAL NOT NULL,
    PRIMARY KEY (type, le)) WITHOUT ROWID;
  INSERT INTO job_seconds
    SELECT type, ${bucketOf('d')}, count(*), sum(d)
    FROM (SELECT i.type, (a.ended_at - a.accepted_at) / 1000.0 AS d FROM attempts a JOIN items i ON i.id = a.item_id
          WHERE a.ended_at IS NOT NULL AND a.accepted_at IS NOT NULL)
    GROUP BY 1, 2;
  CREATE TRIGGER job_seconds_ended AFTER UPDATE OF ended_at ON attempts
    WHEN old.ended_at IS NULL AND new.ended_at IS NOT NULL AND new.accepted_at IS NOT NULL BEGIN
    INSERT INTO job_seconds
      SELECT i.type, ${bucketOf('((new.ended_at - new.accepted_at) / 1000.0)')}, 1, (new.ended_at - new.accepted_at) / 1000.0
      FROM items i WHERE i.id = new.item_id
      ON CONFLICT DO UPDATE SET n = n + 1, sum = sum + excluded.sum;
  END;
  `,
  // 24
  `
  -- Web copies are outputs: with a bucket, a copy is staged and recorded, then published create-only and verified,
  -- and waits (published_at NULL) until it is. In a folder a copy is in place once written (published_at = made_at).
  -- Copies recorded before this were put or written before their record: in place.
  ALTER TABLE derivatives ADD COLUMN published_at INTEGER;
  ALTER TABLE derivatives ADD COLUMN published_to TEXT;
  ALTER TABLE derivatives ADD COLUMN publish_error TEXT;
  UPDATE derivatives SET published_at = made_at;
  CREATE INDEX derivatives_unpublished ON derivatives (made_at) WHERE published_at IS NULL;
  -- The items that ask for copies, so that counting the copies owed reads those alone (none, for most catalogs).
  CREATE INDEX items_asking_copies ON items (id) WHERE json_array_length(spec, '$.finish.derivatives') > 0;
  -- While the bucket answers nothing but faults: since when, when its calls give up, and its last fault (status).
  ALTER TABLE runs ADD COLUMN bucket_trouble_since INTEGER;
  ALTER TABLE runs ADD COLUMN bucket_gives_up_at INTEGER;
  ALTER TABLE runs ADD COLUMN bucket_trouble_code TEXT;
  `,
  // 25
  `
  -- genbatch review answers every filter, count and search from an index, never a scan of the items.
  -- Search: each item's id, prompt, row values and tags, found by any piece of 3 characters or more, in any case
  -- and with or without accents (FTS5's trigram tokenizer). Contentless (the text is the items'), so it costs the
  -- state no copy of it. An item is indexed by the sync that inserts it (no per-row trigger on insert: see 11),
  -- and again by a trigger when its spec changes; its state changing (a run's every step) touches nothing here.
  CREATE VIRTUAL TABLE item_search USING fts5 (
    text, tokenize = 'trigram remove_diacritics 1', content = '', contentless_delete = 1
  );
  INSERT INTO item_search (rowid, text) SELECT rowid, ${searchText('')} FROM items;
  CREATE TRIGGER item_search_update AFTER UPDATE OF id, spec ON items BEGIN
    DELETE FROM item_search WHERE rowid = old.rowid;
    INSERT INTO item_search (rowid, text) VALUES (new.rowid, ${searchText('new.')});
  END;
  CREATE TRIGGER item_search_delete AFTER DELETE ON items BEGIN
    DELETE FROM item_search WHERE rowid = old.rowid;
  END;

  -- Tags: each item's tags in manifest order, so a tag's cards and their count are a range of this table. Written
  -- by the sync that inserts an item, and by a trigger when its spec or place changes.
  CREATE TABLE item_tags (tag TEXT NOT NULL, seq INTEGER NOT NULL, item_rowid INTEGER NOT NULL,
    PRIMARY KEY (tag, seq, item_rowid)) WITHOUT ROWID;
  CREATE INDEX item_tags_item ON item_tags (item_rowid);
  INSERT OR IGNORE INTO item_tags SELECT j.value, i.seq, i.rowid FROM items i, json_each(i.spec, '$.tags') j
    WHERE i.spec -> '$.tags' IS NOT NULL;
  CREATE TRIGGER item_tags_update AFTER UPDATE OF spec, seq ON items BEGIN
    DELETE FROM item_tags WHERE item_rowid = old.rowid;
    INSERT OR IGNORE INTO item_tags SELECT j.value, new.seq, new.rowid FROM json_each(new.spec, '$.tags') j;
  END;
  CREATE TRIGGER item_tags_delete AFTER DELETE ON items BEGIN
    DELETE FROM item_tags WHERE item_rowid = old.rowid;
  END;

  -- The review of each item's current output: NULL (none on disk), unreviewed, approved or rejected. Kept by
  -- triggers on the outputs (a download, a new version, a file found missing) and the decisions.
  ALTER TABLE items ADD COLUMN review TEXT;
  UPDATE items SET review = ${reviewOf('items.id')};
  CREATE TRIGGER items_review_output AFTER INSERT ON outputs BEGIN
    ${setReview('new.item_id')};
  END;
  CREATE TRIGGER items_review_output_update AFTER UPDATE OF sha256, superseded_at, version, idx, item_id ON outputs BEGIN
    ${setReview('old.item_id')};
    ${setReview('new.item_id')} AND new.item_id <> old.item_id;
  END;
  CREATE TRIGGER items_review_output_delete AFTER DELETE ON outputs BEGIN
    ${setReview('old.item_id')};
  END;
  CREATE TRIGGER items_review_decided AFTER INSERT ON reviews BEGIN
    ${setReview('new.item_id')};
  END;
  CREATE TRIGGER items_review_changed AFTER UPDATE ON reviews BEGIN
    ${setReview('new.item_id')};
  END;
  CREATE TRIGGER items_review_cleared AFTER DELETE ON reviews BEGIN
    ${setReview('old.item_id')};
  END;

  -- The grid's filters in manifest order, each with the removed flag first: a filter's cards and its count are a
  -- range of one index (covering for the count).
  CREATE INDEX items_grid_state ON items (removed, state, seq);
  CREATE INDEX items_grid_model ON items (removed, model, seq);
  CREATE INDEX items_grid_review ON items (removed, review, seq);
  CREATE INDEX items_grid ON items (removed, seq);
  -- The decisions the manifest's checks took (a flat frame, a wrong size): counted apart, and few.
  CREATE INDEX reviews_by_checks ON reviews (item_id, version) WHERE by = 'check';
  `,
];

/** What search finds an item by: its id, prompt, row values and tags, one per line (`row`: `new.`, `i.` or ''). */
export function searchText(row: string): string {
  const list = (path: string) =>
    `coalesce((SELECT group_concat(value, char(10)) FROM json_each(${row}spec, '${path}')), '')`;
  return `${row}id || char(10) || coalesce(${row}spec ->> '$.prompt', '') || char(10) || ${list('$.values')} || char(10) || ${list('$.tags')}`;
}

/** Sets an item's review from its outputs and decisions as they are now. */
function setReview(itemId: string): string {
  return `UPDATE items SET review = ${reviewOf(itemId)} WHERE id = ${itemId}`;
}

/** The review of an item's current first output (the grid's card): NULL when none is on disk. */
function reviewOf(itemId: string): string {
  return `(SELECT coalesce(r.decision, 'unreviewed') FROM outputs o
    LEFT JOIN reviews r ON r.item_id = o.item_id AND r.version = o.version
    WHERE o.item_id = ${itemId} AND o.idx = 1 AND o.superseded_at IS NULL AND o.sha256 IS NOT NULL
    ORDER BY o.version DESC LIMIT 1)`;
}

export const SCHEMA_VERSION = MIGRATIONS.length;
/** Marks a SQLite file as genbatch state (PRAGMA application_id), so a foreign file is refused. */
export const APPLICATION_ID = 0x67656e62; // "genb"
