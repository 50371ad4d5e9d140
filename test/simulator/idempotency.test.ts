import { describe, expect, it } from 'vitest';
import { TransportError, reactionTo } from '../../src/api/index.js';
import { imageBody, newKey, rejection, startTestSim } from '../helpers/sim.js';

describe('idempotency keys', () => {
  it('replays the same job for the same key and body, charging once', async () => {
    const t = await startTestSim();
    const key = newKey();
    const first = await t.client.submitImage(imageBody(), key);
    const again = await t.client.submitImage(imageBody(), key);
    expect(again.id).toBe(first.id);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(1);
    expect(t.sim.service.ledger.of('replay')).toHaveLength(1);
    expect((await t.client.me()).credits).toBe(100_000 - 8);
  });

  it('a dropped response after the job was created: resending the same key finds the job, one charge', async () => {
    const t = await startTestSim();
    const key = newKey();
    const lost = await rejection(t.client.submitImage(imageBody('mug [sim:drop]'), key));
    expect(lost).toBeInstanceOf(TransportError);
    expect(reactionTo(lost).do).toBe('resend-with-backoff');
    const found = await t.client.submitImage(imageBody('mug [sim:drop]'), key);
    const [charge] = t.sim.service.ledger.of('charge');
    expect(found.id).toBe(charge!.jobId);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(1);
  });

  it('a refused request does not spend its key: the same key works once the limit clears', async () => {
    const t = await startTestSim({ timeScale: 60, limits: { submissionsPerWindow: 1 } });
    await t.client.submitImage(imageBody('a'), newKey());
    const key = newKey();
    const e = await rejection(t.client.submitImage(imageBody('b'), key));
    expect(e.code).toBe('RATE_LIMITED');
    await new Promise((r) => setTimeout(r, e.retryAfterMs));
    const job = await t.client.submitImage(imageBody('b'), key);
    expect(job.status).toBe('PROCESSING');
    expect(t.sim.service.ledger.of('charge')).toHaveLength(2);
  });

  it('requires an Idempotency-Key holding a UUID', async () => {
    const t = await startTestSim();
    const missing = await t.raw('POST', '/images', { body: imageBody() });
    expect(missing.status).toBe(400);
    expect(missing.json.error.details.field).toBe('Idempotency-Key');
    const notUuid = await t.raw('POST', '/images', { body: imageBody(), headers: { 'idempotency-key': 'abc' } });
    expect(notUuid.status).toBe(400);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(0);
  });

  it('a key used on /images cannot be replayed on /videos with another body', async () => {
    const t = await startTestSim();
    const key = newKey();
    await t.client.submitImage(imageBody(), key);
    const e = await rejection(
      t.client.submitVideo({ prompt: 'x', model: 'motion-extend', sourceJobId: 'job_web_1' }, key),
    );
    expect(e.status).toBe(409);
    expect(e.code).toMatch(/^IDEMPOTENCY_/);
  });
});
