import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it, onTestFinished } from 'vitest';
import { ApiClient } from '../../src/api/index.js';
import { listKeyJobs } from '../../src/reconcile/listing.js';

const FAST = { count: 1000, windowMs: 1000 };
const job = (n: number) => ({
  id: `job_${n}`,
  status: 'COMPLETED',
  origin: 'API',
  credits: { charged: 2, refunded: 0 },
});

/** A job list of 7 jobs in pages of 3 whose cursor comes back the way `style` says; `seen` gets each request's path. */
async function listService(
  style: (page: number) => string,
  seen: string[],
  pageOf: (url: URL) => number,
): Promise<string> {
  const server: Server = createServer((req, res) => {
    seen.push(req.url!);
    const url = new URL(req.url!, 'http://x');
    if (url.searchParams.has('limit')) {
      // This service knows no `limit`: the lister must go on without it.
      res
        .writeHead(400, { 'content-type': 'application/json' })
        .end(JSON.stringify({ error: { code: 'VALIDATION_ERROR', message: 'unknown parameter limit' } }));
      return;
    }
    const page = pageOf(url);
    const jobs = [0, 1, 2]
      .map((i) => page * 3 + i)
      .filter((n) => n < 7)
      .map(job);
    res
      .writeHead(200, { 'content-type': 'application/json' })
      .end(JSON.stringify({ data: jobs, next_cursor: page < 2 ? style(page + 1) : null }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  onTestFinished(() => new Promise<void>((r) => server.close(() => r())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
}

async function listWith(style: (page: number) => string, pageOf: (url: URL) => number) {
  const seen: string[] = [];
  const baseUrl = await listService(style, seen, pageOf);
  const client = new ApiClient({ baseUrl, apiKey: 'gbk_test' });
  onTestFinished(() => client.close());
  return { listing: await listKeyJobs(client, 'fp', FAST), seen };
}

describe('paging through the job list whatever the service calls its cursor', () => {
  it('follows a bare token as ?cursor=, a query fragment as given, and a link as it is; pages without `limit` when the service refuses it', async () => {
    const bare = await listWith(
      (p) => `tok${p}`,
      (u) => Number((u.searchParams.get('cursor') ?? 'tok0').slice(3)),
    );
    expect(bare.listing).toMatchObject({ complete: true, pages: 3 });
    expect(bare.listing.jobs.map((j) => j.id)).toEqual([0, 1, 2, 3, 4, 5, 6].map((n) => `job_${n}`));
    expect(bare.seen).toContain('/v1/jobs?cursor=tok1');

    const fragment = await listWith(
      (p) => `after=job_${p * 3 - 1}`,
      (u) => (u.searchParams.has('after') ? (Number(u.searchParams.get('after')!.slice(4)) + 1) / 3 : 0),
    );
    expect(fragment.listing).toMatchObject({ complete: true, pages: 3 });
    expect(fragment.seen).toContain('/v1/jobs?after=job_2');

    const link = await listWith(
      (p) => `/v1/jobs?page=${p}`,
      (u) => Number(u.searchParams.get('page') ?? 0),
    );
    expect(link.listing).toMatchObject({ complete: true, pages: 3 });
    expect(link.listing.jobs).toHaveLength(7);
    expect(link.seen).toContain('/v1/jobs?page=2');
    expect(link.listing.jobs[0]).toMatchObject({ origin: 'API', charged: 2, key: 'fp' });
  });

  it('stops, saying why, on a cursor seen before or a service that ignores the cursor and answers the first page again', async () => {
    const repeated = await listWith(
      () => 'same',
      (u) => (u.searchParams.has('cursor') ? 1 : 0),
    );
    expect(repeated.listing).toMatchObject({
      complete: false,
      stoppedBecause: expect.stringMatching(/cursor it had given before/),
    });
    expect(repeated.listing.jobs).toHaveLength(6);

    let fresh = 0;
    const ignored = await listWith(
      () => `tok${++fresh}`,
      () => 0,
    );
    expect(ignored.listing).toMatchObject({
      complete: false,
      pages: 2,
      stoppedBecause: expect.stringMatching(/already listed/),
    });
    expect(ignored.listing.jobs).toHaveLength(3);
  });
});
