import type { Db } from './db.js';

/** Submission times, credits per key day, and blocked submissions: what pacing and the breakers read back after a restart. */
export class Accounting {
  private readonly addSubmission;
  private readonly recentSubmissions;
  private readonly addCharge;
  private readonly addRefund;
  private readonly dayStmt;
  private readonly keyDayStmt;
  private readonly byKeyStmt;
  private readonly addBlock;
  private readonly blocksSince;
  /**
   * Times of the blocks after `since`, read once: the breaker asks before
   * every submission (several times per item), and blocks are few and only
   * ever added here.
   */
  private recentBlocks: { since: number; times: number[] } | undefined;

  constructor(db: Db) {
    this.addSubmission = db.prepare('INSERT INTO submissions (at, key_fp) VALUES (?, ?)');
    // A key's own sends, and those of before keys were recorded ('').
    this.recentSubmissions = db.prepare<[number, string], { at: number }>(
      "SELECT at FROM submissions WHERE at > ? AND key_fp IN (?, '') ORDER BY at",
    );
    this.addCharge = db.prepare(
      'INSERT INTO key_day_credits (key_fp, day, charged) VALUES (@keyFp, @day, @credits) ON CONFLICT DO UPDATE SET charged = charged + @credits',
    );
    this.addRefund = db.prepare(
      'INSERT INTO key_day_credits (key_fp, day, refunded) VALUES (@keyFp, @day, @credits) ON CONFLICT DO UPDATE SET refunded = refunded + @credits',
    );
    this.keyDayStmt = db.prepare<[number, string], { charged: number | null }>(
      "SELECT sum(charged) AS charged FROM key_day_credits WHERE day = ? AND key_fp IN (?, '')",
    );
    this.dayStmt = db.prepare<[number], { charged: number | null }>(
      'SELECT sum(charged) AS charged FROM key_day_credits WHERE day = ?',
    );
    this.byKeyStmt = db.prepare<[number], { key_fp: string; charged: number; refunded: number }>(
      'SELECT key_fp, charged, refunded FROM key_day_credits WHERE day = ? ORDER BY key_fp',
    );
    this.addBlock = db.prepare('INSERT INTO blocks (at, item_id) VALUES (?, ?)');
    this.blocksSince = db.prepare<[number], { at: number }>('SELECT at FROM blocks WHERE at > ? ORDER BY at');
  }

  submissionSent(at: number, keyFp: string): void {
    this.addSubmission.run(at, keyFp);
  }

  /** When the key's recent submissions were sent (with those of before keys were recorded). */
  submissionsSince(since: number, keyFp: string): number[] {
    return this.recentSubmissions.all(since, keyFp).map((r) => r.at);
  }

  charged(day: number, credits: number, keyFp: string): void {
    this.addCharge.run({ day, credits, keyFp });
  }

  refunded(day: number, credits: number, keyFp: string): void {
    this.addRefund.run({ day, credits, keyFp });
  }

  /**
   * Gross credits charged on a key day: refunds do not give the cap back (the
   * conservative reading). With a key, that key's (and those of before keys
   * were recorded, counted against every key); without, the whole account's.
   */
  chargedOn(day: number, keyFp?: string): number {
    return (keyFp === undefined ? this.dayStmt.get(day) : this.keyDayStmt.get(day, keyFp))?.charged ?? 0;
  }

  /** Each key's credits on a key day, by fingerprint ('' for charges from before keys were recorded). */
  byKeyOn(day: number): { key_fp: string; charged: number; refunded: number }[] {
    return this.byKeyStmt.all(day);
  }

  blocked(at: number, itemId: string): void {
    this.recentBlocks = undefined;
    this.addBlock.run(at, itemId);
  }

  /** Blocked submissions after `since`. */
  blockedSince(since: number): number {
    if (!this.recentBlocks || since < this.recentBlocks.since)
      this.recentBlocks = { since, times: this.blocksSince.all(since).map((r) => r.at) };
    const { times } = this.recentBlocks;
    let older = 0;
    while (older < times.length && times[older]! <= since) older++;
    return times.length - older;
  }
}
