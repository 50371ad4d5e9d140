import { ApiError, policy, waitMs, type ApiClient, type Job, type JobsPage } from '../api/index.js';
import { RateWindow } from '../scheduler/rate-window.js';
import type { Rate } from '../scheduler/limits.js';

/** A job of the service's list, with the fields a reconcile reads when the service shows them. */
export interface ListedJob {
  id: string;
  /** The fingerprint of the key whose list showed it. */
  key: string;
  status: string;
  origin: string | undefined;
  /** Charged credits, when the job says (the spec does not show the field). */
  charged: number | undefined;
  refunded: number;
  /** When it was created, when the job says (ms). */
  createdAt: number | undefined;
  /** The prompt and model, when the job echoes them. */
  prompt: string | undefined;
  model: string | undefined;
}

export interface KeyListing {
  key: string;
  jobs: ListedJob[];
  pages: number;
  /** Whether the list was read to its end (no cursor left); otherwise why it stopped. */
  complete: boolean;
  stoppedBecause?: string;
}

const PAGE_SIZE = 100;

/**
 * Pages through one key's job list, paced to the key's read limit. Stops when
 * no cursor is left, and, so that a service with another reading of the
 * cursor cannot loop us forever, on a cursor seen before or a page of jobs
 * all seen before.
 */
export async function listKeyJobs(
  client: ApiClient,
  key: string,
  readRate: Rate,
  now: () => number = Date.now,
): Promise<KeyListing> {
  const window = new RateWindow(readRate, now);
  const seenIds = new Set<string>();
  const seenCursors = new Set<string>();
  const jobs: ListedJob[] = [];
  let limit: number | undefined = PAGE_SIZE;
  let cursor: string | undefined;
  let pages = 0;
  try {
    for (;;) {
      const params = limit === undefined ? {} : { limit };
      let page: JobsPage;
      try {
        const at = cursor;
        page = await window.run(() => (at ? client.listJobsAfter(at, params) : client.listJobs(params)));
      } catch (error) {
        if (!(error instanceof ApiError)) throw error;
        const reaction = policy('list-jobs', error);
        if (reaction.do === 'service-default' && limit !== undefined) {
          limit = undefined;
          continue;
        }
        if (reaction.do !== 'wait-and-resend') throw error;
        window.pauseFor(waitMs(reaction, 0, error, (ms) => ms, readRate));
        continue;
      }
      pages++;
      const fresh = page.jobs.filter((j) => !seenIds.has(j.id));
      for (const job of fresh) {
        seenIds.add(job.id);
        jobs.push(listed(job, key));
      }
      if (!page.nextCursor) return { key, jobs, pages, complete: true };
      if (seenCursors.has(page.nextCursor))
        return { key, jobs, pages, complete: false, stoppedBecause: 'the service gave a cursor it had given before' };
      if (page.jobs.length > 0 && fresh.length === 0)
        return {
          key,
          jobs,
          pages,
          complete: false,
          stoppedBecause: 'the service answered a page of jobs already listed (it may read the cursor differently)',
        };
      seenCursors.add(page.nextCursor);
      cursor = page.nextCursor;
    }
  } finally {
    window.stop();
  }
}

function listed(job: Job, key: string): ListedJob {
  const raw = job.raw;
  const text = (...names: string[]) => {
    for (const name of names) if (typeof raw[name] === 'string' && raw[name] !== '') return raw[name] as string;
    return undefined;
  };
  const created = text('createdAt', 'created_at', 'created', 'submittedAt');
  const createdMs = created === undefined ? Number.NaN : Date.parse(created);
  return {
    id: job.id,
    key,
    status: job.status,
    origin: job.origin ?? undefined,
    charged: job.charged,
    refunded: job.refunded,
    createdAt: Number.isFinite(createdMs) ? createdMs : undefined,
    prompt: text('prompt'),
    model: text('model', 'modelId', 'model_id'),
  };
}
