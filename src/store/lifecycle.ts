import type { Accounting } from './accounting.js';
import type { Attempts } from './attempts.js';
import { withRelaxedSync, type Db } from './db.js';
import type { OutputFiles, SavedFile } from './output-files.js';
import { MOVES, type Move, type MoveName, type MoveTo } from './machine/moves.js';
import { ENDED_WITHOUT_OUTPUT, sqlStates, type ItemState } from './machine/states.js';

/** A move's `from` as SQL (`state IN (…)`): the table's lists, never input. */
const from = (move: MoveName): string => sqlStates((MOVES[move] as Move).from);
/** The states the settling of gated items leaves (wait, take back, skip by gate, let go). */
const SETTLED_FROM = [
  ...new Set<ItemState>([...MOVES.wait.from, ...MOVES.takeBack.from, ...MOVES.skipByGate.from, ...MOVES.letGo.from]),
];
/** The moves that put an item back unsent, to be sent again: a gated one settles on its gates with them. */
const UNSENT_MOVES = new Set<MoveName>(
  (Object.keys(MOVES) as MoveName[]).filter((name) => {
    const move = MOVES[name] as Move;
    return move.from.length > 0 && move.to.some((to) => to === 'pending' || to === 'queued') && name !== 'queue';
  }),
);
/** The moves that take an item into or out of `done`: a gate's dependents settle with them. */
const GATE_MOVES = new Set<MoveName>(
  (Object.keys(MOVES) as MoveName[]).filter((name) => {
    const move = MOVES[name] as Move;
    return move.from.includes('done') !== move.to.includes('done');
  }),
);

/** An attempt about to leave with the key `keyFp`. */
export interface SentRecord {
  id: string;
  n: number;
  now: number;
  keyFp: string;
}

export interface ErrorNote {
  code: string;
  message: string;
}

/**
 * The item's life, one machine: every move of machine/moves.ts is made here,
 * and nothing else in genbatch writes an item's state (no trigger moves an
 * item). Each is one transaction whose item update is guarded by the states
 * the table lets it leave (`WHERE state IN (…)`) and by the guard written
 * beside it, so a move never overwrites a state another task moved the item
 * to; what the service did with money (a charge, a refund, a block) is
 * recorded whatever the item's state. A move into or out of `done` settles
 * what the item gates in the same transaction. Each returns whether the item
 * moved.
 */
export class Lifecycle {
  private readonly move;
  private readonly insert;
  private readonly note;
  private readonly begin;
  private readonly uploadFailure;
  private readonly redoRejectedStmt;
  private readonly sendStmt;
  private readonly settleStmt;
  private readonly settleItemsStmt;
  private readonly isGateStmt;
  private readonly isGatedStmt;
  private readonly reviveStmt;
  private readonly doomedStmt;

  constructor(
    private readonly db: Db,
    private readonly attempts: Attempts,
    private readonly accounting: Accounting,
    private readonly outputFiles: OutputFiles,
  ) {
    // `@from` is a JSON array of the states the item may leave.
    this.move = db.prepare(
      'UPDATE items SET state = @to, error_code = @code, error_message = @message, not_before = @notBefore, updated_at = @now WHERE id = @id AND state IN (SELECT value FROM json_each(@from))',
    );
    this.note = db.prepare(
      'UPDATE items SET error_code = @code, error_message = @message, updated_at = @now WHERE id = @id AND state = @state',
    );
    // No trigger counts an inserted item (migration 11): sync adds what it inserted to the tally, once per type.
    // Positional: binding by name cost a third of the time to insert a 100,000-row catalog.
    this.insert = db.prepare<[string, number, string, string, string, string, number, number, number]>(
      "INSERT INTO items (id, seq, type, model, content_hash, spec, priority, rank, state, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?)",
    );
    this.uploadFailure = db.prepare(
      `UPDATE items SET upload_failures = upload_failures + 1, state = 'pending', not_before = @notBefore, updated_at = @now WHERE id = @id AND state IN ${from('postpone')}`,
    );
    this.redoRejectedStmt = db.prepare(
      `UPDATE items SET state = 'pending', error_code = NULL, error_message = NULL, not_before = 0, updated_at = @now
       WHERE id = @id AND state IN ${from('redoRejected')} AND EXISTS (
         SELECT 1 FROM reviews r JOIN outputs o ON o.item_id = r.item_id AND o.version = r.version AND o.superseded_at IS NULL
         WHERE r.item_id = @id AND r.decision = 'rejected')`,
    );
    // The send's guard: a resend goes on (it was sent: what was sent is never undone); a first send leaves queued
    // only while every gate's current version is approved, asked in the transaction that marks it submitting.
    this.sendStmt = db.prepare(
      `UPDATE items SET state = 'submitting', error_code = NULL, error_message = NULL, not_before = 0, updated_at = @now
       WHERE id = @id AND (state IN ${from('resend')} OR (state IN ${from('send')} AND NOT EXISTS (
         SELECT 1 FROM gates g JOIN items gi ON gi.id = g.gate_id
         WHERE g.item_id = @id AND (gi.state IS NOT 'done' OR gi.review IS NOT 'approved'))))`,
    );
    // The items these gates gate (a JSON array of ids), not sent, go where all their gates put them (wait, take back,
    // skip by gate, let go), for any number of gates in one statement (the gates' own rows first, each dependent
    // once). A dependent moved here is never done, so what it gates in turn stays as it was: one level suffices.
    // `+items.state`: no index on the state, so each chosen item is found by its id, not every open item scanned and
    // matched (20 ms a gate at 20,000 items).
    const settle = (chosen: string) =>
      db.prepare<[string], { id: string; state: string }>(
        `UPDATE items SET
         state = CASE WHEN s.rejected IS NOT NULL THEN 'skipped' WHEN s.open IS NOT NULL THEN 'waiting'
           WHEN items.state = 'queued' THEN 'queued' ELSE 'pending' END,
         error_code = CASE WHEN s.rejected IS NOT NULL THEN 'GATE_REJECTED'
           WHEN items.error_code = 'GATE_REJECTED' THEN NULL ELSE items.error_code END,
         error_message = CASE WHEN s.rejected IS NOT NULL THEN 'its gate ' || s.rejected || CASE WHEN EXISTS (
             SELECT 1 FROM reviews r JOIN outputs o ON o.item_id = r.item_id AND o.version = r.version AND o.idx = 1
               AND o.superseded_at IS NULL WHERE r.item_id = s.rejected AND r.by = 'timeout')
             THEN ' was not decided within its approval timeout, which skips what it gates: it is not sent'
             ELSE ' was rejected in review: it is not sent' END
           WHEN items.error_code = 'GATE_REJECTED' THEN NULL ELSE items.error_message END
       FROM (
         SELECT d.item_id,
           min(CASE WHEN gi.state = 'done' AND gi.review = 'rejected' THEN g.gate_id END) AS rejected,
           min(CASE WHEN gi.state IS NOT 'done' OR gi.review IS NOT 'approved' THEN g.gate_id END) AS open
         FROM (SELECT DISTINCT d.item_id FROM json_each(?) j CROSS JOIN gates d ON ${chosen} = j.value) AS d
           CROSS JOIN gates g ON g.item_id = d.item_id CROSS JOIN items gi ON gi.id = g.gate_id
         GROUP BY d.item_id
       ) AS s
       WHERE items.id = s.item_id
         AND +items.state IN ${sqlStates(SETTLED_FROM)}
         AND (+items.state <> 'skipped' OR items.error_code = 'GATE_REJECTED')
       RETURNING items.id, items.state`,
      );
    this.settleStmt = settle('d.gate_id');
    this.isGateStmt = db.prepare<[string], number>('SELECT 1 FROM gates WHERE gate_id = ? LIMIT 1').pluck();
    this.isGatedStmt = db.prepare<[string], number>('SELECT 1 FROM gates WHERE item_id = ? LIMIT 1').pluck();
    // The same for gated items themselves (a JSON array of ids), when one of them is put back unsent.
    this.settleItemsStmt = settle('d.item_id');
    // Skipped for an input that can be made again now (a gate made again, a rejection undone): back to pending.
    this.reviveStmt = db
      .prepare<[], string>(
        `UPDATE items SET state = 'pending', error_code = NULL, error_message = NULL
         WHERE state IN ${from('revive')} AND error_code = 'DEPENDENCY_FAILED' AND removed = 0
           AND NOT EXISTS (SELECT 1 FROM deps d JOIN items di ON di.id = d.dep_id
             WHERE d.item_id = items.id AND di.state IN ${sqlStates(ENDED_WITHOUT_OUTPUT)})
         RETURNING id`,
      )
      .pluck();
    // The skip's guard: a dependency ended without an output. CROSS JOIN keeps SQLite's join order: from the (few)
    // dependencies, never from the 100,000 pending items (68 ms a call).
    this.doomedStmt = db.prepare<[], { id: string; dep_id: string; dep_state: string }>(
      `SELECT i.id AS id, d.dep_id AS dep_id, di.state AS dep_state FROM deps d CROSS JOIN items di ON di.id = d.dep_id CROSS JOIN items i ON i.id = d.item_id
       WHERE di.state IN ${sqlStates(ENDED_WITHOUT_OUTPUT)} AND i.state IN ${from('skip')} ORDER BY i.seq`,
    );
    this.begin = db.prepare(
      `UPDATE items SET attempt = @n, state = 'queued', error_code = NULL, error_message = NULL, not_before = 0, updated_at = @now WHERE id = @id AND state IN ${from('queue')}`,
    );
  }

  /** Makes the move `move` to `to`, guarded by the table's `from`; a move into or out of done settles what the item gates. */
  private make<M extends MoveName>(
    move: M,
    id: string,
    to: MoveTo<M>,
    now: number,
    error?: ErrorNote,
    notBefore = 0,
  ): boolean {
    const write = () =>
      this.move.run({
        id,
        from: JSON.stringify(MOVES[move].from),
        to,
        code: error?.code ?? null,
        message: error?.message ?? null,
        notBefore,
        now,
      }).changes === 1;
    const gate = GATE_MOVES.has(move);
    const unsent = UNSENT_MOVES.has(move);
    if (!gate && !unsent) return write();
    const settle = () => this.settled(id, write(), gate, unsent);
    return this.db.inTransaction ? settle() : this.tx(settle);
  }

  /**
   * After a move of `id` (when `moved`), in its transaction: an item made or unmade (`gate`) settles what it gates,
   * and an item put back unsent (`unsent`) goes where its own gates put it: a decision binds whatever moved it back.
   * Asked first whether there is anything to settle: the settling statement joins every item.
   */
  private settled(id: string, moved: boolean, gate: boolean, unsent: boolean): boolean {
    if (!moved) return false;
    if (gate && this.isGateStmt.get(id) !== undefined) this.settleGated([id]);
    if (unsent && this.isGatedStmt.get(id) !== undefined) this.settleItemsStmt.all(JSON.stringify([id]));
    return true;
  }

  private tx<T>(fn: () => T): T {
    return this.db.transaction(fn).immediate();
  }

  /** A transaction that records what a request's answer said: flushed with the next durable commit (see withRelaxedSync). */
  private answerTx<T>(fn: () => T): T {
    return withRelaxedSync(this.db, () => this.tx(fn));
  }

  /** A manifest's item new to the state enters it pending (the caller counts it in the tally); its rowid. */
  add(
    id: string,
    seq: number,
    type: string,
    model: string,
    contentHash: string,
    spec: string,
    priority: number,
    now: number,
  ): number | bigint {
    return this.insert.run(id, seq, type, model, contentHash, spec, priority, -priority, now).lastInsertRowid;
  }

  /**
   * pending → queued: the attempt's key and exact body are committed; only
   * then may the request leave. It belongs to the API key `keyFp` from now on
   * (its body may name that key's uploads and jobs). Not flushed here: the
   * send's commit (recordSent, full-synced) flushes it with itself before
   * the request leaves, one fsync per submission instead of two. Lost to a
   * power cut before that, nothing was sent, and the attempt made again has
   * the same number, hence the same key.
   */
  startAttempt(
    id: string,
    n: number,
    key: string,
    body: string,
    now: number,
    keyFp: string,
    inputs: string | null = null,
  ): boolean {
    return withRelaxedSync(this.db, () =>
      this.tx(() => {
        if (this.begin.run({ id, n, now }).changes !== 1) return false;
        this.attempts.create(id, n, key, body, now, keyFp, inputs);
        return true;
      }),
    );
  }

  /**
   * queued → submitting (or a resend of a submitting one): the request is
   * about to leave, and from now on the attempt may be accepted. False when
   * the item has moved on meanwhile: then nothing may be sent.
   */
  recordSent(id: string, n: number, now: number, keyFp: string): boolean {
    return this.tx(() => this.sent({ id, n, now, keyFp }));
  }

  /**
   * recordSent for several attempts about to leave together, in one
   * transaction: one fsync for a burst of submissions instead of one each.
   * Each is guarded as it would be alone; whether each may leave, in order.
   */
  recordSentAll(sends: readonly SentRecord[]): boolean[] {
    return this.tx(() => sends.map((send) => this.sent(send)));
  }

  private sent({ id, n, now, keyFp }: SentRecord): boolean {
    // An attempt sent with another key is never resent with this one: that key's idempotency may not reach the job.
    const boundTo = this.attempts.keyOf(id, n);
    if (boundTo !== null && boundTo !== keyFp) return false;
    if (this.sendStmt.run({ id, now }).changes !== 1) return false;
    this.accounting.submissionSent(now, keyFp);
    this.attempts.markSent(id, n, now, keyFp);
    return true;
  }

  /** submitting → running: the service named the job and what it charged (not_before is cleared with the move). */
  recordAccepted(id: string, n: number, jobId: string, charged: number, day: number, now: number): boolean {
    // Lost to a power cut, the attempt is still submitting under its key: resent, the service names the same job.
    return this.answerTx(() => {
      const keyFp = this.attempts.markAccepted(id, n, jobId, charged, now);
      this.accounting.charged(day, charged, keyFp);
      return this.make('accept', id, 'running', now);
    });
  }

  /**
   * The answer left the attempt's fate open (no answer, a 5xx, a 503, the key
   * still in flight): it stays submitting and is resent with the same key from
   * `notBefore` on, by whichever task picks it up then. No in-flight slot is
   * held while it waits.
   */
  deferResend(
    id: string,
    n: number,
    notBefore: number,
    now: number,
    after: 'no-answer' | 'unavailable' = 'no-answer',
  ): boolean {
    return this.tx(() => {
      // A 503 said no job was made: its one retry is counted apart from the resends of an answer that left the fate open.
      if (after === 'unavailable') this.attempts.countUnavailable(id, n);
      else this.attempts.countResend(id, n);
      return this.make('defer', id, 'submitting', now, undefined, Math.max(1, notBefore));
    });
  }

  /**
   * No answer said which job the attempt made, if any, and this run's resends
   * ran out: submitting → maybe_accepted, held for a later run to resend with
   * the same key, with a fresh count of resends.
   */
  recordMaybeAccepted(id: string, n: number, error: ErrorNote, now: number): boolean {
    return this.tx(() => {
      this.attempts.countResend(id, n, true);
      return this.make('hold', id, 'maybe_accepted', now, error);
    });
  }

  /**
   * The service refused the attempt, so it created no job and spent no key:
   * submitting → pending (a new attempt, or a later run), or a final state.
   */
  recordRefused(
    id: string,
    n: number,
    error: ErrorNote,
    to: 'pending' | 'failed' | 'rejected' | 'blocked',
    now: number,
  ): boolean {
    return this.tx(() => {
      this.attempts.markRefused(id, n, error.code, error.message, now);
      if (to === 'blocked') this.accounting.blocked(now, id);
      return this.make('refuse', id, to, now, to === 'pending' ? undefined : error);
    });
  }

  /** A 409 other than IN_FLIGHT: a job may exist under the key; submitting → failed, never replaced on its own. */
  recordConflict(id: string, n: number, error: ErrorNote, now: number): boolean {
    return this.tx(() => {
      this.attempts.markConflict(id, n, error.code, error.message, now);
      return this.make('conflict', id, 'failed', now, error);
    });
  }

  /**
   * The job ended. COMPLETED: running → downloading, and the item's outputs
   * are this job's from now on. FAILED/EXPIRED: the refund is recorded; the
   * caller decides between a new attempt and the end.
   */
  recordEnded(
    id: string,
    n: number,
    end: {
      jobId: string;
      status: 'completed' | 'failed' | 'expired';
      refunded: number;
      refundDay: number;
      error?: { code: string; message?: string };
    },
    now: number,
  ): boolean {
    // Lost to a power cut, the job is still running here: polled again. A new attempt after a failure commits durably first.
    return this.answerTx(() => {
      this.attempts.markEnded(id, n, end.status, end.refunded, now, end.error);
      if (end.refunded > 0) this.accounting.refunded(end.refundDay, end.refunded, this.attempts.keyOf(id, n) ?? '');
      if (end.status !== 'completed') return true;
      this.outputFiles.supersedeOtherJobs(id, end.jobId, now);
      return this.make('download', id, 'downloading', now);
    });
  }

  /**
   * The attempt was sent with a key this run does not have: the item keeps
   * its state (a submitting one is held as maybe accepted), noted, for a run
   * with that key. Neither resent nor polled with another key.
   */
  heldForKey(id: string, n: number, state: ItemState, error: ErrorNote, now: number): boolean {
    if (state === 'submitting') return this.recordMaybeAccepted(id, n, error, now);
    return this.note.run({ id, state, ...error, now }).changes === 1;
  }

  /** A paid job that cannot be read now: it stays running, the reason noted, for a later run to ask again. */
  keepJob(id: string, error: ErrorNote, now: number): boolean {
    return this.note.run({ id, state: 'running', ...error, now }).changes === 1;
  }

  /** Back to pending: nothing of the item is on the wire (an unsent attempt, or a job that ended and is to be tried again). */
  requeue(id: string, now: number, notBefore = 0): boolean {
    return this.make('requeue', id, 'pending', now, undefined, notBefore);
  }

  /**
   * `--redo-changed`: an item whose content changed goes back to pending, to
   * be made anew. Never one with an attempt on the wire or a job in flight
   * (it may be paid for): those keep their state and are marked changed.
   */
  redoChanged(id: string, now: number): boolean {
    return this.make('redoChanged', id, 'pending', now);
  }

  /**
   * `--redo-rejected`, `retry --rejected`: done → pending, only while its
   * current version is rejected in review. Its next attempt has a new key;
   * the rejected outputs stay on disk as an earlier version.
   */
  redoRejected(id: string, now: number): boolean {
    return this.tx(() => this.settled(id, this.redoRejectedStmt.run({ id, now }).changes === 1, true, true));
  }

  /**
   * `retry`: a failed or skipped item (or a download that stopped) goes back:
   * to pending, or with an attempt that has no job yet to queued (never sent)
   * or maybe accepted (sent: resent with its own key, never replaced), or a
   * download to downloading again.
   */
  putBack(id: string, to: 'pending' | 'queued' | 'maybe_accepted' | 'downloading', now: number): boolean {
    return this.make('retry', id, to, now);
  }

  /** An upload of the item's inputs failed: counted on the item, which waits (pending) until `notBefore` to try again. */
  uploadFailed(id: string, now: number, notBefore: number): boolean {
    return this.uploadFailure.run({ id, now, notBefore }).changes === 1;
  }

  /** Ends an open item without an output. */
  endWithoutOutput(
    id: string,
    to: 'failed' | 'rejected' | 'blocked' | 'skipped',
    error: ErrorNote,
    now: number,
  ): boolean {
    return this.make('fail', id, to, now, error);
  }

  /** pending → skipped: it can never run as the manifest stands (a dependency ended without an output, no price to keep a budget). */
  markSkipped(id: string, error: ErrorNote, now: number): boolean {
    return this.make('skip', id, 'skipped', now, error);
  }

  /**
   * An output is on disk, verified; with the item's last one, downloading →
   * done in the same commit (one fsync fewer per item). True when the item moved.
   */
  outputSaved(id: string, jobId: string, idx: number, file: SavedFile, now: number, last: boolean): boolean {
    // Lost to a power cut, the output is downloaded again (the file itself was synced before its rename).
    return this.answerTx(() => {
      this.outputFiles.markDownloaded(jobId, idx, file, now);
      return last && this.make('verify', id, 'done', now);
    });
  }

  /** downloading → done: every output is on disk, verified. */
  downloaded(id: string, now: number): boolean {
    return this.make('verify', id, 'done', now);
  }

  /** A download could not finish: the item stays downloading, the reason noted; a later run downloads it, never resubmits. */
  downloadFailed(id: string, error: ErrorNote, now: number): boolean {
    return this.note.run({ id, state: 'downloading', ...error, now }).changes === 1;
  }

  /** done → downloading: an output is gone from disk (or changed); a later download fetches it again. */
  outputMissing(id: string, jobId: string, idx: number, now: number): boolean {
    return this.tx(() => {
      this.outputFiles.markMissing(jobId, idx);
      return this.make('lose', id, 'downloading', now);
    });
  }

  /**
   * pending or waiting → skipped, until none is left: each item a dependency of which ended without an output, and
   * theirs in turn (a skipped item dooms its own dependents). Returns each item skipped, with why, in order.
   */
  skipDoomed(now: number): (ErrorNote & { id: string })[] {
    return this.tx(() => {
      const skipped: (ErrorNote & { id: string })[] = [];
      for (let doomed = this.doomedStmt.all(); doomed.length > 0; doomed = this.doomedStmt.all()) {
        const seen = new Set<string>();
        for (const { id, dep_id, dep_state } of doomed) {
          if (seen.has(id)) continue;
          seen.add(id);
          const error = { code: 'DEPENDENCY_FAILED', message: `${dep_id} ended ${dep_state}` };
          if (this.make('skip', id, 'skipped', now, error)) skipped.push({ id, ...error });
        }
      }
      return skipped;
    });
  }

  /**
   * Gated items not sent (pending, queued, waiting, or skipped by a rejected gate) of these gates go where all their
   * gates put them: skipped while one is rejected, waiting while one is not made and approved, else let go (a queued
   * one stays queued). Returns each item written, with its state now.
   */
  settleGated(gateIds: readonly string[]): { id: string; state: string }[] {
    return this.settleStmt.all(JSON.stringify(gateIds));
  }

  /** skipped → pending for each item skipped for an input that can be made again now; returns them. */
  reviveSkipped(): string[] {
    return this.reviveStmt.all();
  }

  /** An error no policy foresaw: a pending item ends failed (nothing is on the wire); any other keeps its state, the reason noted. */
  crashed(id: string, state: ItemState, error: ErrorNote, now: number): boolean {
    if (state === 'pending') return this.make('crash', id, 'failed', now, error);
    return this.note.run({ id, state, ...error, now }).changes === 1;
  }
}
