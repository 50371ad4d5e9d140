import type { Db } from './db.js';

/** Submission times, credits per key day, and blocked submissions: what pacing and the breakers read back after a restart. */
export class Accounting {
  private readonly addSubmission;
  private readonly recentSubmissions;
  private readonly addCharge;
  private readonly addRefund;
  private readonly dayStmt;
  private readonly addBlock;
  private readonly blocksSince;

  constructor(db: Db) {
    this.addSubmission = db.prepare('INSERT INTO submissions (at) VALUES (?)');
    this.recentSubmissions = db.prepare<[number], { at: number }>('SELECT at FROM submissions WHERE at > ? ORDER BY at');
    this.addCharge = db.prepare('INSERT INTO daily_credits (day, charged) VALUES (@day, @credits) ON CONFLICT (day) DO UPDATE SET charged = charged + @credits');
    this.addRefund = db.prepare('INSERT INTO daily_credits (day, refunded) VALUES (@day, @credits) ON CONFLICT (day) DO UPDATE SET refunded = refunded + @credits');
    this.dayStmt = db.prepare<[number], { charged: number; refunded: number }>('SELECT charged, refunded FROM daily_credits WHERE day = ?');
    this.addBlock = db.prepare('INSERT INTO blocks (at, item_id) VALUES (?, ?)');
    this.blocksSince = db.prepare<[number], { n: number }>('SELECT count(*) AS n FROM blocks WHERE at > ?');
  }

  submissionSent(at: number): void {
    this.addSubmission.run(at);
  }

  submissionsSince(since: number): number[] {
    return this.recentSubmissions.all(since).map((r) => r.at);
  }

  charged(day: number, credits: number): void {
    this.addCharge.run({ day, credits });
  }

  refunded(day: number, credits: number): void {
    this.addRefund.run({ day, credits });
  }

  /** Gross credits charged on a key day: refunds do not give the cap back (the conservative reading). */
  chargedOn(day: number): number {
    return this.dayStmt.get(day)?.charged ?? 0;
  }

  blocked(at: number, itemId: string): void {
    this.addBlock.run(at, itemId);
  }

  blockedSince(since: number): number {
    return this.blocksSince.get(since)!.n;
  }
}
