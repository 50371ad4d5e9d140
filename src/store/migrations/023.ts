/** Migration 23. */
export const sql = `
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
    SELECT type, CASE WHEN d <= 1 THEN 1 WHEN d <= 2.5 THEN 2.5 WHEN d <= 5 THEN 5 WHEN d <= 10 THEN 10 WHEN d <= 20 THEN 20 WHEN d <= 30 THEN 30 WHEN d <= 45 THEN 45 WHEN d <= 60 THEN 60 WHEN d <= 90 THEN 90 WHEN d <= 120 THEN 120 WHEN d <= 180 THEN 180 WHEN d <= 300 THEN 300 WHEN d <= 450 THEN 450 WHEN d <= 600 THEN 600 WHEN d <= 900 THEN 900 WHEN d <= 1800 THEN 1800 ELSE 9e999 END, count(*), sum(d)
    FROM (SELECT i.type, (a.ended_at - a.accepted_at) / 1000.0 AS d FROM attempts a JOIN items i ON i.id = a.item_id
          WHERE a.ended_at IS NOT NULL AND a.accepted_at IS NOT NULL)
    GROUP BY 1, 2;
  CREATE TRIGGER job_seconds_ended AFTER UPDATE OF ended_at ON attempts
    WHEN old.ended_at IS NULL AND new.ended_at IS NOT NULL AND new.accepted_at IS NOT NULL BEGIN
    INSERT INTO job_seconds
      SELECT i.type, CASE WHEN ((new.ended_at - new.accepted_at) / 1000.0) <= 1 THEN 1 WHEN ((new.ended_at - new.accepted_at) / 1000.0) <= 2.5 THEN 2.5 WHEN ((new.ended_at - new.accepted_at) / 1000.0) <= 5 THEN 5 WHEN ((new.ended_at - new.accepted_at) / 1000.0) <= 10 THEN 10 WHEN ((new.ended_at - new.accepted_at) / 1000.0) <= 20 THEN 20 WHEN ((new.ended_at - new.accepted_at) / 1000.0) <= 30 THEN 30 WHEN ((new.ended_at - new.accepted_at) / 1000.0) <= 45 THEN 45 WHEN ((new.ended_at - new.accepted_at) / 1000.0) <= 60 THEN 60 WHEN ((new.ended_at - new.accepted_at) / 1000.0) <= 90 THEN 90 WHEN ((new.ended_at - new.accepted_at) / 1000.0) <= 120 THEN 120 WHEN ((new.ended_at - new.accepted_at) / 1000.0) <= 180 THEN 180 WHEN ((new.ended_at - new.accepted_at) / 1000.0) <= 300 THEN 300 WHEN ((new.ended_at - new.accepted_at) / 1000.0) <= 450 THEN 450 WHEN ((new.ended_at - new.accepted_at) / 1000.0) <= 600 THEN 600 WHEN ((new.ended_at - new.accepted_at) / 1000.0) <= 900 THEN 900 WHEN ((new.ended_at - new.accepted_at) / 1000.0) <= 1800 THEN 1800 ELSE 9e999 END, 1, (new.ended_at - new.accepted_at) / 1000.0
      FROM items i WHERE i.id = new.item_id
      ON CONFLICT DO UPDATE SET n = n + 1, sum = sum + excluded.sum;
  END;
  `;
