/** Migration 3: run sessions, so status and the report can tell run time, whether a run is alive, and an ETA; outputs indexed by item. */
export const sql = `
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
  `;
