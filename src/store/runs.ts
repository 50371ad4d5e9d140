import type { Db } from './db.js';

export interface RunRow {
  id: number;
  started_at: number;
  heartbeat_at: number;
  ended_at: number | null;
  limits: string;
  time_scale: number;
  out_dir: string;
  waiting_until: number | null;
  unreachable_since: number | null;
}

/** Run sessions: one row per `genbatch run` of this state file, kept alive by a heartbeat. */
export class Runs {
  private readonly insert;
  private readonly beatStmt;
  private readonly endStmt;
  private readonly allStmt;

  constructor(db: Db) {
    this.insert = db.prepare(
      'INSERT INTO runs (started_at, heartbeat_at, limits, time_scale, out_dir) VALUES (@now, @now, @limits, @timeScale, @outDir)',
    );
    this.beatStmt = db.prepare(
      'UPDATE runs SET heartbeat_at = @now, waiting_until = @waitingUntil, unreachable_since = @unreachableSince WHERE id = @id',
    );
    this.endStmt = db.prepare(
      'UPDATE runs SET heartbeat_at = @now, ended_at = @now, waiting_until = NULL, unreachable_since = NULL WHERE id = @id',
    );
    this.allStmt = db.prepare<[], RunRow>('SELECT * FROM runs ORDER BY id');
  }

  begin(now: number, run: { limits: unknown; timeScale: number; outDir: string }): number {
    return Number(
      this.insert.run({ now, limits: JSON.stringify(run.limits), timeScale: run.timeScale, outDir: run.outDir })
        .lastInsertRowid,
    );
  }

  /** The run is alive; while it waits for the daily cap, until when; while the service answers nothing, since when. */
  beat(id: number, now: number, waitingUntil: number | undefined, unreachableSince?: number): void {
    this.beatStmt.run({
      id,
      now,
      waitingUntil: waitingUntil && waitingUntil > now ? waitingUntil : null,
      unreachableSince: unreachableSince ?? null,
    });
  }

  end(id: number, now: number): void {
    this.endStmt.run({ id, now });
  }

  all(): RunRow[] {
    return this.allStmt.all();
  }
}
