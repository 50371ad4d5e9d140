import type { Accounts, SimAccount, SimKey } from './accounts.js';
import type { Ledger } from './ledger.js';
import type { JobVisibility } from './options.js';
import type { Presigner } from './presign.js';

export type JobStatus = 'PROCESSING' | 'COMPLETED' | 'FAILED' | 'EXPIRED';
export type JobEnd = Exclude<JobStatus, 'PROCESSING'>;

export interface SimJob {
  id: string;
  seq: number;
  type: 'image' | 'video';
  origin: 'api' | 'web';
  account: SimAccount;
  keyLabel: string | null;
  model: string;
  prompt: string;
  params: Record<string, unknown>;
  createdAt: number;
  endsAt: number;
  /** How the job will end; it shows only once `endsAt` has passed. */
  end: JobEnd;
  status: JobStatus;
  charged: number;
  refunded: number;
  outputCount: number;
  /** Times its output links were issued; with the expired-link marker the first issue is already stale. */
  linkIssues?: number;
}

const END_ERRORS: Record<'FAILED' | 'EXPIRED', { code: string; message: string }> = {
  FAILED: { code: 'GENERATION_FAILED', message: 'The generation failed; the credits were refunded.' },
  EXPIRED: { code: 'JOB_EXPIRED', message: 'The job expired before it could run; the credits were refunded.' },
};

export const OUTPUT_CONTENT_TYPE = { image: 'image/png', video: 'video/mp4' } as const;

export class Jobs {
  readonly byId = new Map<string, SimJob>();
  private readonly processing = new Set<SimJob>();
  private nextSeq = 1;

  constructor(
    private readonly accounts: Accounts,
    private readonly ledger: Ledger,
  ) {}

  add(job: Omit<SimJob, 'seq' | 'status'>): SimJob {
    const full: SimJob = { ...job, seq: this.nextSeq++, status: 'PROCESSING' };
    this.byId.set(full.id, full);
    this.processing.add(full);
    return full;
  }

  /** Ends every job whose time has come; a FAILED or EXPIRED job is refunded as it ends. */
  settle(now: number): void {
    for (const job of this.processing) {
      if (job.endsAt > now) continue;
      this.processing.delete(job);
      job.status = job.end;
      if (job.end !== 'COMPLETED' && job.charged > 0) {
        job.refunded = job.charged;
        this.accounts.refund(job.account, job.charged);
        if (job.keyLabel) {
          this.ledger.record({
            kind: 'refund',
            at: job.endsAt,
            key: job.keyLabel,
            jobId: job.id,
            credits: job.charged,
            status: job.end,
          });
        }
      }
    }
  }

  inFlight(keyLabel: string, type: 'image' | 'video'): number {
    let n = 0;
    for (const job of this.processing) if (job.keyLabel === keyLabel && job.type === type) n++;
    return n;
  }

  /** Soonest time one of this key's in-flight jobs of this type ends. */
  nextEnd(keyLabel: string, type: 'image' | 'video'): number {
    let soonest = Infinity;
    for (const job of this.processing) {
      if (job.keyLabel === keyLabel && job.type === type) soonest = Math.min(soonest, job.endsAt);
    }
    return soonest;
  }

  /** Whether `key` sees the job: any job of its account, or (the strict reading) those it made and the web application's. */
  visibleTo(job: SimJob, key: SimKey, visibility: JobVisibility): boolean {
    return (
      job.account === key.account && (visibility === 'account' || job.keyLabel === key.label || job.keyLabel === null)
    );
  }

  /** A key's page of the job list, newest first: the jobs `visibleTo` lets it see. */
  list(key: SimKey, visibility: JobVisibility, type: string | undefined, beforeSeq: number, limit: number): SimJob[] {
    const out: SimJob[] = [];
    const all = [...this.byId.values()].filter(
      (j) => this.visibleTo(j, key, visibility) && (!type || j.type === type) && j.seq < beforeSeq,
    );
    all.sort((a, b) => b.seq - a.seq);
    for (const job of all) {
      if (out.length >= limit) break;
      out.push(job);
    }
    return out;
  }

  render(job: SimJob, presigner: Presigner, now: number, linkTtlMs: number): Record<string, unknown> {
    const body: Record<string, unknown> = {
      id: job.id,
      type: job.type,
      status: job.status,
      model: job.model,
      prompt: job.prompt,
      origin: job.origin,
      createdAt: new Date(job.createdAt).toISOString(),
      credits: { charged: job.charged, refunded: job.refunded },
      ...job.params,
    };
    if (job.status !== 'PROCESSING') body.finishedAt = new Date(job.endsAt).toISOString();
    if (job.status === 'COMPLETED') {
      const stale = job.prompt.includes('[sim:expired-link]') && !job.linkIssues;
      job.linkIssues = (job.linkIssues ?? 0) + 1;
      const expiresAt = stale ? now - 1 : now + linkTtlMs;
      const contentType = OUTPUT_CONTENT_TYPE[job.type];
      body.outputs = Array.from({ length: job.outputCount }, (_, i) => {
        const path = `/outputs/${job.id}/${i + 1}`;
        return {
          url: presigner.sign(path, expiresAt, { disposition: 'inline' }),
          downloadUrl: presigner.sign(path, expiresAt, { disposition: 'attachment' }),
          contentType,
          expiresAt: new Date(expiresAt).toISOString(),
        };
      });
    }
    if (job.status === 'FAILED' || job.status === 'EXPIRED') body.error = END_ERRORS[job.status];
    return body;
  }
}
