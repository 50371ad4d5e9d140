import { createHash } from 'node:crypto';
import { canonicalJson } from '../util/canonical-json.js';
import { SimError } from './sim-error.js';

interface Entry {
  bodyHash: string;
  state: 'in-flight' | 'done';
  jobId?: string;
  at: number;
}

export const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Idempotency keys per key and endpoint. Only a request that created a job
 * consumes its key: a request refused for any reason may be resent with it.
 */
export class IdempotencyKeys {
  private readonly entries = new Map<string, Entry>();

  constructor(private readonly retentionMs: number) {}

  static hash(body: unknown): string {
    return createHash('sha256').update(canonicalJson(body)).digest('hex');
  }

  /** The job to replay, or undefined when this request should be handled (and is now in flight). */
  begin(scope: string, key: string, bodyHash: string, now: number): string | undefined {
    const id = `${scope}\n${key}`;
    const entry = this.entries.get(id);
    if (entry && entry.state === 'done' && now - entry.at > this.retentionMs) this.entries.delete(id);
    const live = this.entries.get(id);
    if (!live) {
      this.entries.set(id, { bodyHash, state: 'in-flight', at: now });
      return undefined;
    }
    if (live.state === 'in-flight') {
      throw new SimError(
        409,
        'IDEMPOTENCY_IN_FLIGHT',
        'A request with this Idempotency-Key is still being handled; query again shortly.',
        undefined,
        { 'Retry-After': '1' },
      );
    }
    if (live.bodyHash !== bodyHash) {
      throw new SimError(
        409,
        'IDEMPOTENCY_KEY_REUSED',
        'This Idempotency-Key was already used with a different request body; use a new key.',
      );
    }
    return live.jobId;
  }

  /** How many requests are being handled now (tests wait for a concurrent resend's moment). */
  get inFlight(): number {
    let n = 0;
    for (const entry of this.entries.values()) if (entry.state === 'in-flight') n++;
    return n;
  }

  complete(scope: string, key: string, jobId: string, now: number): void {
    const entry = this.entries.get(`${scope}\n${key}`);
    if (entry) Object.assign(entry, { state: 'done', jobId, at: now });
  }

  abandon(scope: string, key: string): void {
    this.entries.delete(`${scope}\n${key}`);
  }
}
