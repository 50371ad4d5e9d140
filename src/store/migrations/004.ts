/** Migration 4: what each item waits for, so the feeder asks SQLite for ready items instead of scanning pending ones. */
export const sql = `
  CREATE TABLE deps (
    item_id TEXT NOT NULL,
    dep_id TEXT NOT NULL,
    PRIMARY KEY (item_id, dep_id)
  );
  CREATE INDEX deps_dep ON deps (dep_id);
  -- Which output owns a file: a download never overwrites another item's paid output.
  CREATE INDEX outputs_path ON outputs (path);
  `;
