import type { Db } from './db.js';

/**
 * `sent` without a job id is "maybe accepted": only ever resent with the same
 * key and body. `conflict`: the service said the key was spent on another body
 * (a 409 other than IN_FLIGHT), so a job may exist under it.
 */
export type AttemptStatus =
  | 'created'
  | 'sent'
  | 'accepted'
  | 'completed'
  | 'failed'
  | 'expired'
  | 'refused'
  | 'conflict';

export interface AttemptRow {
  item_id: string;
  n: number;
  idempotency_key: string;
  body: string;
  status: AttemptStatus;
  job_id: string | null;
  charged: number;
  refunded: number;
  error_code: string | null;
  error_message: string | null;
  created_at: number;
  sent_at: number | null;
  accepted_at: number | null;
  ended_at: number | null;
  /** Times this attempt was resent (same key) after an answer that left its fate open, since it was last held for a later run. */
  resends: number;
  /** Times it was resent after a 503 (the spec's "retry once later"), counted apart from `resends`. */
  unavailable_resends: number;
  /** The fingerprint of the API key it belongs to: the one its body was built for, and sent with (null: from before keys were recorded). */
  key_fp: string | null;
}

/** An attempt as a reconcile compares it with the service's job list. */
export type AttemptForReconcile = Pick<
  AttemptRow,
  'item_id' | 'n' | 'status' | 'job_id' | 'charged' | 'refunded' | 'key_fp'
>;

/** Submission attempts: each one's idempotency key, exact body, job and credits. */
export class Attempts {
  private readonly insert;
  private readonly latestStmt;
  private readonly sentStmt;
  private readonly keyOfStmt;
  private readonly reconcileStmt;
  private readonly resendsStmt;
  private readonly unavailableStmt;
  private readonly acceptedStmt;
  private readonly endedStmt;
  private readonly refusedStmt;
  private readonly conflictStmt;
  private readonly anyStmt;
  private readonly totalsStmt;
  private readonly endedBadlyStmt;
  private readonly ofItemStmt;
  private readonly largestStmt;
  private readonly byKeyStmt;

  constructor(db: Db) {
    this.insert = db.prepare(
      "INSERT INTO attempts (item_id, n, idempotency_key, body, status, created_at, key_fp, inputs) VALUES (@itemId, @n, @key, @body, 'created', @now, @keyFp, @inputs)",
    );
    this.latestStmt = db.prepare<[string], AttemptRow>(
      'SELECT * FROM attempts WHERE item_id = ? ORDER BY n DESC LIMIT 1',
    );
    this.resendsStmt = db.prepare(
      'UPDATE attempts SET resends = CASE WHEN @reset THEN 0 ELSE resends + 1 END WHERE item_id = @itemId AND n = @n AND job_id IS NULL',
    );
    this.unavailableStmt = db.prepare(
      'UPDATE attempts SET unavailable_resends = unavailable_resends + 1 WHERE item_id = @itemId AND n = @n AND job_id IS NULL',
    );
    this.sentStmt = db.prepare(
      "UPDATE attempts SET status = CASE WHEN status = 'created' THEN 'sent' ELSE status END, sent_at = coalesce(sent_at, @now), key_fp = coalesce(key_fp, @keyFp) WHERE item_id = @itemId AND n = @n",
    );
    // Only attempts that may have reached the service: sent, whatever came back.
    this.reconcileStmt = db.prepare<[], AttemptForReconcile>(
      'SELECT item_id, n, status, job_id, charged, refunded, key_fp FROM attempts WHERE sent_at IS NOT NULL ORDER BY item_id, n',
    );
    this.keyOfStmt = db
      .prepare<[string, number], string | null>('SELECT key_fp FROM attempts WHERE item_id = ? AND n = ?')
      .pluck();
    this.acceptedStmt = db.prepare<
      { itemId: string; n: number; jobId: string; charged: number; now: number },
      { key_fp: string | null }
    >(
      "UPDATE attempts SET status = 'accepted', job_id = @jobId, charged = @charged, accepted_at = @now WHERE item_id = @itemId AND n = @n RETURNING key_fp",
    );
    this.endedStmt = db.prepare(
      'UPDATE attempts SET status = @status, refunded = @refunded, error_code = @code, error_message = @message, ended_at = @now WHERE item_id = @itemId AND n = @n',
    );
    this.refusedStmt = db.prepare(
      "UPDATE attempts SET status = 'refused', error_code = @code, error_message = @message, ended_at = @now WHERE item_id = @itemId AND n = @n",
    );
    this.conflictStmt = db.prepare(
      "UPDATE attempts SET status = 'conflict', error_code = @code, error_message = @message, ended_at = @now WHERE item_id = @itemId AND n = @n AND job_id IS NULL",
    );
    this.endedBadlyStmt = db.prepare<[string], { n: number }>(
      "SELECT count(*) AS n FROM attempts WHERE item_id = ? AND status IN ('failed', 'expired')",
    );
    this.largestStmt = db.prepare<[], { model: string; credits: number }>(
      'SELECT i.model AS model, max(a.charged) AS credits FROM attempts a JOIN items i ON i.id = a.item_id WHERE a.job_id IS NOT NULL GROUP BY i.model',
    );
    this.ofItemStmt = db.prepare<[string], AttemptRow>('SELECT * FROM attempts WHERE item_id = ? ORDER BY n');
    this.byKeyStmt = db.prepare<[], { key_fp: string; jobs: number; charged: number; refunded: number }>(
      "SELECT coalesce(key_fp, '') AS key_fp, count(job_id) AS jobs, sum(charged) AS charged, sum(refunded) AS refunded FROM attempts WHERE sent_at IS NOT NULL GROUP BY 1 ORDER BY 1",
    );
    this.anyStmt = db.prepare<[], { one: number }>('SELECT 1 AS one FROM attempts LIMIT 1');
    // Kept by triggers (migration 7): one row, read on every submission and every frame of the live line.
    this.totalsStmt = db.prepare<[], { charged: number; refunded: number }>(
      'SELECT charged, refunded FROM attempt_totals',
    );
  }

  /**
   * A new attempt. `keyFp`: the API key whose uploads and source jobs the body names; it is sent with that key
   * alone. `inputs`: the versions of earlier items' outputs its body was made from, as JSON.
   */
  create(
    itemId: string,
    n: number,
    key: string,
    body: string,
    now: number,
    keyFp: string | null = null,
    inputs: string | null = null,
  ): void {
    this.insert.run({ itemId, n, key, body, now, keyFp, inputs });
  }

  /** Whether any attempt was ever committed: a state that made none has sent no key yet. */
  anyMade(): boolean {
    return this.anyStmt.get() !== undefined;
  }

  latest(itemId: string): AttemptRow | undefined {
    return this.latestStmt.get(itemId);
  }

  /** The attempt leaves with this key; the first key it left with stays its key. */
  markSent(itemId: string, n: number, now: number, keyFp: string): void {
    this.sentStmt.run({ itemId, n, now, keyFp });
  }

  /** Every attempt that was sent. */
  forReconcile(): AttemptForReconcile[] {
    return this.reconcileStmt.all();
  }

  /** The fingerprint of the key the attempt belongs to (null: made before keys were recorded, and not sent since). */
  keyOf(itemId: string, n: number): string | null {
    return this.keyOfStmt.get(itemId, n) ?? null;
  }

  /** One more resend of the attempt's key is due later; `reset` starts the count again (the attempt is held for a later run). */
  countResend(itemId: string, n: number, reset = false): void {
    this.resendsStmt.run({ itemId, n, reset: reset ? 1 : 0 });
  }

  /** One more resend after a 503. */
  countUnavailable(itemId: string, n: number): void {
    this.unavailableStmt.run({ itemId, n });
  }

  /** The attempt's key's fingerprint ('' from before keys were recorded). */
  markAccepted(itemId: string, n: number, jobId: string, charged: number, now: number): string {
    return this.acceptedStmt.get({ itemId, n, jobId, charged, now })?.key_fp ?? '';
  }

  markEnded(
    itemId: string,
    n: number,
    status: 'completed' | 'failed' | 'expired',
    refunded: number,
    now: number,
    error?: { code: string; message?: string },
  ): void {
    this.endedStmt.run({
      itemId,
      n,
      status,
      refunded,
      code: error?.code ?? null,
      message: error?.message ?? null,
      now,
    });
  }

  /** The service refused the request: nothing was charged, the key was not spent. */
  markRefused(itemId: string, n: number, code: string, message: string, now: number): void {
    this.refusedStmt.run({ itemId, n, code, message, now });
  }

  /** The key may have created a job with another body: never resent, never replaced on its own. */
  markConflict(itemId: string, n: number, code: string, message: string, now: number): void {
    this.conflictStmt.run({ itemId, n, code, message, now });
  }

  /** How many of the item's jobs ended FAILED or EXPIRED. */
  failedCount(itemId: string): number {
    return this.endedBadlyStmt.get(itemId)!.n;
  }

  ofItem(itemId: string): AttemptRow[] {
    return this.ofItemStmt.all(itemId);
  }

  totals(): { charged: number; refunded: number } {
    return this.totalsStmt.get()!;
  }

  /** What each API key (by fingerprint; '' from before keys were recorded) sent: its jobs and credits. */
  byKey(): { key_fp: string; jobs: number; charged: number; refunded: number }[] {
    return this.byKeyStmt.all();
  }

  /** Per model, the largest charge of any job: a price bound where the catalog gives none. */
  largestChargeByModel(): { model: string; credits: number }[] {
    return this.largestStmt.all();
  }

  /** What reports need of every attempt, grouped by item: one pass instead of a query per item. */
}
