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
  /** Transfers silent inside their body at the last heartbeat, and since when the oldest moved no byte. */
  stalled_transfers: number | null;
  stalled_since: number | null;
  /** After how long (ms) a silent transfer is abandoned and tried again. */
  idle_timeout_ms: number | null;
  /** The bucket answered nothing but faults since then (its last fault's code), and its calls give up then. */
  bucket_trouble_since: number | null;
  bucket_gives_up_at: number | null;
  bucket_trouble_code: string | null;
}

/** What a heartbeat says of the run's waits. */
export interface Beat {
  /** Every key waits for its daily cap until then. */
  waitingUntil?: number | undefined;
  /** The service has answered nothing since then. */
  unreachableSince?: number | undefined;
  /** Transfers silent inside their body. */
  stalled?: { count: number; since: number } | undefined;
  /** The bucket answers nothing but faults. */
  bucket?: { since: number; givesUpAt: number; code: string } | undefined;
}

/** Run sessions: one row per `genbatch run` of this state file, kept alive by a heartbeat. */
export class Runs {
  private readonly insert;
  private readonly beatStmt;
  private readonly endStmt;
  private readonly allStmt;

  constructor(db: Db) {
    this.insert = db.prepare(
      'INSERT INTO runs (started_at, heartbeat_at, limits, time_scale, out_dir, idle_timeout_ms) VALUES (@now, @now, @limits, @timeScale, @outDir, @idleTimeoutMs)',
    );
    this.beatStmt = db.prepare(
      `UPDATE runs SET heartbeat_at = @now, waiting_until = @waitingUntil, unreachable_since = @unreachableSince,
         stalled_transfers = @stalled, stalled_since = @stalledSince, bucket_trouble_since = @bucketSince,
         bucket_gives_up_at = @bucketGivesUpAt, bucket_trouble_code = @bucketCode WHERE id = @id`,
    );
    this.endStmt = db.prepare(
      `UPDATE runs SET heartbeat_at = @now, ended_at = @now, waiting_until = NULL, unreachable_since = NULL,
         stalled_transfers = NULL, stalled_since = NULL, bucket_trouble_since = NULL, bucket_gives_up_at = NULL,
         bucket_trouble_code = NULL WHERE id = @id`,
    );
    this.allStmt = db.prepare<[], RunRow>('SELECT * FROM runs ORDER BY id');
  }

  begin(now: number, run: { limits: unknown; timeScale: number; outDir: string; idleTimeoutMs?: number }): number {
    return Number(
      this.insert.run({
        now,
        limits: JSON.stringify(run.limits),
        timeScale: run.timeScale,
        outDir: run.outDir,
        idleTimeoutMs: run.idleTimeoutMs ?? null,
      }).lastInsertRowid,
    );
  }

  /** The run is alive, and what it waits for: the daily cap until when, the service since when, silent transfers. */
  beat(id: number, now: number, waits: Beat = {}): void {
    const { waitingUntil, unreachableSince, stalled, bucket } = waits;
    this.beatStmt.run({
      id,
      now,
      waitingUntil: waitingUntil && waitingUntil > now ? waitingUntil : null,
      unreachableSince: unreachableSince ?? null,
      stalled: stalled?.count ?? null,
      stalledSince: stalled?.since ?? null,
      bucketSince: bucket?.since ?? null,
      bucketGivesUpAt: bucket?.givesUpAt ?? null,
      bucketCode: bucket?.code ?? null,
    });
  }

  end(id: number, now: number): void {
    this.endStmt.run({ id, now });
  }

  all(): RunRow[] {
    return this.allStmt.all();
  }
}
