import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { scrubSecrets } from '../util/secrets.js';
import { COORDINATOR_MIGRATIONS } from './migrations.js';
import { safeUrl } from './url.js';
import { GenbatchError } from '../util/errors.js';

export type SendKind = 'submit' | 'read' | 'upload';

/** The database cannot be reached or refused a statement: what waits on it goes on waiting. */
export class CoordinatorError extends GenbatchError {
  override readonly name = 'CoordinatorError';
}

/** An unanswered request older than this counts as answered (its process died on the wire): a long poll's wait and timeouts, with room. */
const STALE_SEND_MS = 90_000;
/** The lock under which processes starting together migrate the schema once. */
const MIGRATION_LOCK = 0x67656e62;

/**
 * Every genbatch process that uses the same PostgreSQL database shares each
 * key's limits through it: the sliding windows of submissions, reads and
 * upload grants, the in-flight slots (under leases renewed while jobs run),
 * the key day's credits (reserved before each submission, settled after),
 * and the blocked submissions. All SQL of the coordinator is here and in its
 * migrations; each decision is one statement, taken under an advisory lock.
 */
export class Coordinator {
  /** This process, as the holder of its slots and reservations. */
  readonly holder = randomUUID();
  private readonly pool: pg.Pool;
  /** Releases and settlements under way, which close() waits for. */
  private readonly pending = new Set<Promise<unknown>>();

  private constructor(
    private readonly url: string,
    /** How long a slot or reservation outlives its holder's last renewal. */
    readonly leaseMs: number,
  ) {
    this.pool = new pg.Pool({
      connectionString: url,
      max: 4,
      connectionTimeoutMillis: 5_000,
      idleTimeoutMillis: 10_000,
      allowExitOnIdle: true,
    });
    // A connection that breaks (the server restarts) must not crash the run: its query fails, the next one reconnects.
    // The pool listens on idle clients only; a checked-out client's 'error' is ours to take (node-postgres #2762).
    this.pool.on('error', () => {});
    this.pool.on('connect', (client) => client.on('error', () => {}));
  }

  /** Connects and brings the schema to the current version. */
  static async open(url: string, options: { leaseMs: number }): Promise<Coordinator> {
    const coordinator = new Coordinator(url, options.leaseMs);
    try {
      await coordinator.migrate();
    } catch (error) {
      await coordinator.close();
      throw error;
    }
    return coordinator;
  }

  /** The database's schema version after migrating. */
  async migrate(): Promise<number> {
    const client = await this.connect();
    try {
      await client.query('BEGIN');
      await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
      await client.query('CREATE TABLE IF NOT EXISTS genbatch_schema (version int NOT NULL)');
      const row = (await client.query<{ version: number }>('SELECT version FROM genbatch_schema')).rows[0];
      const from = row?.version ?? 0;
      for (let v = from; v < COORDINATOR_MIGRATIONS.length; v++) await client.query(COORDINATOR_MIGRATIONS[v]!);
      if (!row) await client.query('INSERT INTO genbatch_schema VALUES ($1)', [COORDINATOR_MIGRATIONS.length]);
      else
        await client.query('UPDATE genbatch_schema SET version = $1', [Math.max(from, COORDINATOR_MIGRATIONS.length)]);
      await client.query('COMMIT');
      return Math.max(from, COORDINATOR_MIGRATIONS.length);
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {});
      throw this.error(error);
    } finally {
      client.release();
    }
  }

  /** A send of `kind` on the key now: its id; or how long to wait for one. */
  async acquireSend(
    keyFp: string,
    kind: SendKind,
    rate: { count: number; windowMs: number },
  ): Promise<{ id: string } | { waitMs: number }> {
    const value = Number(
      await this.scalar('SELECT genbatch_acquire_send($1, $2, $3, $4, $5) AS v', [
        keyFp,
        kind,
        rate.count,
        Math.ceil(rate.windowMs),
        STALE_SEND_MS,
      ]),
    );
    return value > 0 ? { id: String(value) } : { waitMs: -value };
  }

  /** How many sends of `kind` count in the key's window now (as `genbatch_acquire_send` counts them). */
  async sendsInWindow(keyFp: string, kind: SendKind, windowMs: number): Promise<number> {
    return Number(
      await this.scalar(
        'SELECT count(*) AS v FROM genbatch_sends WHERE key_fp = $1 AND kind = $2 AND coalesce(answered_at, sent_at + $3) + $4 >= genbatch_now_ms()',
        [keyFp, kind, STALE_SEND_MS, Math.ceil(windowMs)],
      ),
    );
  }

  /** The send's answer came back: it counts one window more. */
  answered(id: string): Promise<void> {
    return this.track(this.query('UPDATE genbatch_sends SET answered_at = genbatch_now_ms() WHERE id = $1', [id]));
  }

  /** A place granted and never sent (the request found it may not leave): it leaves the window now, for every process. */
  unused(id: string): Promise<void> {
    return this.track(this.query('DELETE FROM genbatch_sends WHERE id = $1', [id]));
  }

  /** Holds every process's sends of `kind` on the key for `ms` (a 429's Retry-After). */
  async pause(keyFp: string, kind: SendKind, ms: number): Promise<void> {
    await this.query(
      `INSERT INTO genbatch_pauses VALUES ($1, $2, genbatch_now_ms() + $3) ON CONFLICT (key_fp, kind) DO UPDATE SET until_ms = greatest(genbatch_pauses.until_ms, excluded.until_ms)`,
      [keyFp, kind, Math.ceil(ms)],
    );
  }

  /** An in-flight slot for the item (`force`: its job runs already, whatever the count). */
  async acquireSlot(
    keyFp: string,
    type: 'image' | 'video',
    cap: number,
    item: string,
    force = false,
  ): Promise<boolean> {
    return (
      (await this.scalar('SELECT genbatch_acquire_slot($1, $2, $3, $4, $5, $6, $7) AS v', [
        keyFp,
        type,
        cap,
        this.holder,
        item,
        this.leaseMs,
        force,
      ])) === true
    );
  }

  /** The job ended: its slot is free for every process. Not awaited by the caller; close() waits for it. */
  releaseSlot(keyFp: string, type: 'image' | 'video', item: string): Promise<void> {
    return this.track(
      this.query('DELETE FROM genbatch_slots WHERE key_fp = $1 AND type = $2 AND holder = $3 AND item = $4', [
        keyFp,
        type,
        this.holder,
        item,
      ]),
    );
  }

  /** Credits of a submission, reserved on the key's day within its cap: the reservation; undefined when they do not fit now. */
  async reserveCredits(keyFp: string, day: number, credits: number, cap: number): Promise<string | undefined> {
    const id = Number(
      await this.scalar('SELECT genbatch_reserve_credits($1, $2, $3, $4, $5, $6) AS v', [
        keyFp,
        day,
        credits,
        cap,
        this.holder,
        this.leaseMs,
      ]),
    );
    return id > 0 ? String(id) : undefined;
  }

  /** The submission was answered: its reservation goes, and what was charged counts on the day. */
  settleCredits(id: string, keyFp: string, day: number, charged: number): Promise<void> {
    return this.track(
      this.transaction(async (client) => {
        await client.query('DELETE FROM genbatch_reservations WHERE id = $1', [id]);
        if (charged > 0) {
          await client.query(
            'INSERT INTO genbatch_day_credits VALUES ($1, $2, $3) ON CONFLICT (key_fp, day) DO UPDATE SET charged = genbatch_day_credits.charged + excluded.charged',
            [keyFp, day, charged],
          );
        }
      }),
    );
  }

  async noteBlock(keyFp: string): Promise<void> {
    await this.query('INSERT INTO genbatch_blocks VALUES ($1, genbatch_now_ms())', [keyFp]);
  }

  /** Blocked submissions of these keys in the last `windowMs`, by any process. */
  async blockedSince(keyFps: readonly string[], windowMs: number): Promise<number> {
    return Number(
      await this.scalar(
        'SELECT count(*) AS v FROM genbatch_blocks WHERE key_fp = ANY($1) AND at > genbatch_now_ms() - $2',
        [keyFps, Math.ceil(windowMs)],
      ),
    );
  }

  /** Renews every slot and reservation this process holds (while its jobs run). */
  async renewLeases(): Promise<void> {
    await this.transaction(async (client) => {
      await client.query('UPDATE genbatch_slots SET lease_until = genbatch_now_ms() + $2 WHERE holder = $1', [
        this.holder,
        this.leaseMs,
      ]);
      await client.query('UPDATE genbatch_reservations SET lease_until = genbatch_now_ms() + $2 WHERE holder = $1', [
        this.holder,
        this.leaseMs,
      ]);
    });
  }

  /**
   * The releases still on their way are waited for, the reservations of
   * submissions this process no longer waits on are let go, and the
   * connections close. Slots still held are not: their jobs may still run
   * (an interrupt stops polling, not the job), so they lapse with their lease.
   */
  async close(): Promise<void> {
    await Promise.allSettled([...this.pending]);
    await this.query('DELETE FROM genbatch_reservations WHERE holder = $1', [this.holder]).catch(() => {});
    await this.pool.end().catch(() => {});
  }

  private track<T>(promise: Promise<T>): Promise<T> {
    this.pending.add(promise);
    void promise.finally(() => this.pending.delete(promise)).catch(() => {});
    return promise;
  }

  private async connect(): Promise<pg.PoolClient> {
    try {
      return await this.pool.connect();
    } catch (error) {
      throw this.error(error);
    }
  }

  private async transaction(fn: (client: pg.PoolClient) => Promise<void>): Promise<void> {
    const client = await this.connect();
    try {
      await client.query('BEGIN');
      await fn(client);
      await client.query('COMMIT');
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {});
      throw this.error(error);
    } finally {
      client.release();
    }
  }

  private async query(text: string, values: unknown[]): Promise<void> {
    try {
      await this.pool.query(text, values);
    } catch (error) {
      throw this.error(error);
    }
  }

  private async scalar(text: string, values: unknown[]): Promise<unknown> {
    try {
      return (await this.pool.query<{ v: unknown }>(text, values)).rows[0]?.v;
    } catch (error) {
      throw this.error(error);
    }
  }

  /** Never the URL's password in a message (nor the driver's error as its cause: its message may hold it). */
  private error(error: unknown): CoordinatorError {
    const password = safeUrl(this.url)?.password;
    const message = (error as Error)?.message ?? String(error);
    return new CoordinatorError(
      `the coordinator's database: ${password ? scrubSecrets(message, [decodeURIComponent(password)]) : message}`,
    );
  }
}
