import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { StorageError } from '../../src/api/index.js';
import { imageBody, newKey, rejection, startTestSim, type TestSim } from '../helpers/sim.js';

async function bytesOf(t: TestSim, url: string): Promise<Buffer> {
  const dl = await t.client.download(url);
  const chunks: Buffer[] = [];
  for await (const chunk of dl.body) chunks.push(chunk as Buffer);
  const body = Buffer.concat(chunks);
  expect(dl.contentLength).toBe(body.length);
  return body;
}

const PNG_MAGIC = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

describe('jobs: long polling, ends, refunds, outputs, links', () => {
  it('a 30 s long poll at time scale 1 returns when the job ends, not at the timeout', async () => {
    const t = await startTestSim({ timeScale: 1, imageSeconds: [1.5, 1.5] });
    const job = await t.client.submitImage(imageBody(), newKey());
    const started = Date.now();
    const done = await t.client.getJob(job.id, 30);
    const elapsed = Date.now() - started;
    expect(done.status).toBe('COMPLETED');
    expect(elapsed).toBeGreaterThan(1000);
    expect(elapsed).toBeLessThan(10_000); // far below the 30 s wait: it answered at the end, not the timeout
  });

  it('a long poll on a job still running answers PROCESSING after the wait', async () => {
    const t = await startTestSim({ timeScale: 1, imageSeconds: [600, 600] });
    const job = await t.client.getJob((await t.client.submitImage(imageBody(), newKey())).id, 1);
    expect(job.status).toBe('PROCESSING');
    expect(job.outputs).toEqual([]);
  });

  it('refuses a wait over 30 seconds', async () => {
    const t = await startTestSim();
    const res = await t.raw('GET', '/jobs/job_web_1?wait=31');
    expect(res.status).toBe(400);
    expect(res.json.error.details.field).toBe('wait');
  });

  it.each([
    ['FAILED', '[sim:fail]', 'GENERATION_FAILED'],
    ['EXPIRED', '[sim:expire]', 'JOB_EXPIRED'],
  ])('a job that ends %s is refunded and says why', async (status, marker, code) => {
    const t = await startTestSim({ timeScale: 60, imageSeconds: [10, 10] });
    const job = await t.client.submitImage(imageBody(`mug ${marker}`), newKey());
    expect((await t.client.me()).credits).toBe(100_000 - 8);
    const ended = await t.client.getJob(job.id, 30);
    expect(ended.status).toBe(status);
    expect(ended.error?.code).toBe(code);
    expect(ended.refunded).toBe(8);
    expect((await t.client.me()).credits).toBe(100_000);
    expect(t.sim.service.ledger.of('refund')).toMatchObject([{ jobId: job.id, credits: 8 }]);
  });

  it('completed image jobs have distinct, valid PNG outputs', async () => {
    const t = await startTestSim({ timeScale: 60, imageSeconds: [5, 5], imageOutputs: 2 });
    const a = await t.client.getJob((await t.client.submitImage(imageBody('a'), newKey())).id, 30);
    const b = await t.client.getJob((await t.client.submitImage(imageBody('b'), newKey())).id, 30);
    expect(a.outputs).toHaveLength(2);
    const hashes = new Set<string>();
    for (const job of [a, b]) {
      for (const output of job.outputs) {
        const bytes = await bytesOf(t, output.downloadUrl);
        expect(bytes.subarray(0, 8).equals(PNG_MAGIC)).toBe(true);
        hashes.add(createHash('sha256').update(bytes).digest('hex'));
      }
    }
    expect(hashes.size).toBe(4);
  });

  it('an output link stops working after its lifetime; a new GET of the job issues one that works', async () => {
    const t = await startTestSim({ timeScale: 1, imageSeconds: [0.2, 0.2], linkTtlSeconds: 0.5 });
    const job = await t.client.getJob((await t.client.submitImage(imageBody(), newKey())).id, 5);
    const oldUrl = job.outputs[0]!.downloadUrl;
    await new Promise((r) => setTimeout(r, 600));
    const e = await rejection(bytesOf(t, oldUrl));
    expect(e).toBeInstanceOf(StorageError);
    expect(e.status).toBe(403);
    expect(e.message).not.toContain('signature=');
    const fresh = await t.client.getJob(job.id);
    expect(fresh.outputs[0]!.downloadUrl).not.toBe(oldUrl);
    expect((await bytesOf(t, fresh.outputs[0]!.downloadUrl)).subarray(0, 8).equals(PNG_MAGIC)).toBe(true);
  });

  it('a tampered link is refused', async () => {
    const t = await startTestSim({ timeScale: 60, imageSeconds: [1, 1] });
    const job = await t.client.getJob((await t.client.submitImage(imageBody(), newKey())).id, 30);
    const url = job.outputs[0]!.downloadUrl.replace(/expires=\d+/, 'expires=99999999999999');
    expect((await rejection(bytesOf(t, url))).status).toBe(403);
  });

  it('lists API and web-application jobs page by page, newest first, with origin', async () => {
    const t = await startTestSim({ webJobs: 3 });
    for (let i = 0; i < 3; i++) await t.client.submitImage(imageBody(`p${i}`), newKey());
    const pages: string[][] = [];
    let cursor: string | undefined;
    do {
      const page = await t.client.listJobs({ limit: 2, ...(cursor ? { cursor } : {}) });
      pages.push(page.jobs.map((j) => j.id));
      cursor = page.nextCursor;
    } while (cursor);
    expect(pages.map((p) => p.length)).toEqual([2, 2, 2]);
    const all = [];
    for await (const job of t.client.allJobs({ limit: 4 })) all.push(job);
    expect(all.map((j) => j.id)).toEqual(pages.flat());
    expect(all.map((j) => j.origin)).toEqual(['api', 'api', 'api', 'web', 'web', 'web']);
    expect((await t.client.listJobs({ type: 'video' })).jobs).toEqual([]);
  });

  it('refuses list limits out of bounds and cursors it did not issue', async () => {
    const t = await startTestSim();
    for (const q of ['limit=0', 'limit=101', 'limit=x', 'cursor=bogus', 'type=audio']) {
      const res = await t.raw('GET', `/jobs?${q}`);
      expect(res.status, q).toBe(400);
      expect(res.json.error.code).toBe('VALIDATION_ERROR');
    }
  });

  it('answers 404 for an unknown job and for another account’s job', async () => {
    const t = await startTestSim({ keys: [{ label: 'main' }, { label: 'stranger', account: 'other' }] });
    const job = await t.client.submitImage(imageBody(), newKey());
    expect((await t.raw('GET', '/jobs/job_nope')).status).toBe(404);
    const res = await t.raw('GET', `/jobs/${job.id}`, { key: t.sim.keys.stranger! });
    expect(res.status).toBe(404);
    expect(res.json.error.code).toBe('NOT_FOUND');
  });
});
