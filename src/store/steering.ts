import type { Db } from './db.js';

/** What another shell asked of the run: no new submissions (paused), or finish what is in flight and end (draining). */
export type SteeringMode = 'paused' | 'draining';

export interface SteeringRequest {
  mode: SteeringMode;
  /** When it was asked. */
  since: number;
}

/** What the run did about the last request, so the command that made it can say so. */
export interface SteeringAnswer {
  mode: SteeringMode | 'running';
  at: number;
  pid: number;
  /** Jobs in flight when it acted (submissions awaiting an answer, jobs being polled). */
  inFlight: number;
  /** Items not sent (pending or queued) when it acted. */
  notSent: number;
}

/**
 * The run's steering row: `pause`, `resume` and `drain` write it from another
 * shell (no signal, no socket), the run reads it every quarter second and
 * answers in its own row. It lives in `meta`, so a paused state stays paused
 * across a kill and a restart.
 */
export class Steering {
  private readonly getStmt;
  private readonly setStmt;
  private readonly deleteStmt;

  constructor(db: Db) {
    this.getStmt = db.prepare<[string], { value: string }>('SELECT value FROM meta WHERE key = ?');
    this.setStmt = db.prepare(
      'INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value',
    );
    this.deleteStmt = db.prepare('DELETE FROM meta WHERE key = ?');
  }

  // Kept in meta under its first names ('control', 'control_answer'): states already hold them.

  /** What is asked of the run now; undefined: run. */
  request(): SteeringRequest | undefined {
    return this.read<SteeringRequest>('control');
  }

  ask(mode: SteeringMode | undefined, now: number): void {
    if (mode) this.setStmt.run('control', JSON.stringify({ mode, since: now } satisfies SteeringRequest));
    else this.deleteStmt.run('control');
  }

  answer(): SteeringAnswer | undefined {
    return this.read<SteeringAnswer>('control_answer');
  }

  answered(answer: SteeringAnswer): void {
    this.setStmt.run('control_answer', JSON.stringify(answer));
  }

  private read<T>(key: string): T | undefined {
    const value = this.getStmt.get(key)?.value;
    if (value === undefined) return undefined;
    try {
      return JSON.parse(value) as T;
    } catch {
      return undefined;
    }
  }
}
