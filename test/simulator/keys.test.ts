import { describe, expect, it } from 'vitest';
import { simulatorOptions } from '../../src/cli/commands/simulate.js';
import { imageBody, newKey, startTestSim } from '../helpers/sim.js';

const PNG_1PX = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
  'base64',
);

describe('an account with several keys', () => {
  it('shares one balance; each key has its own daily cap, limits and in-flight slots, and /me says so', async () => {
    const t = await startTestSim({
      credits: 1000,
      keys: [
        { label: 'a', dailyCap: 500 },
        { label: 'b', dailyCap: 300, limits: { submissionsPerWindow: 2, imagesInFlight: 1 } },
      ],
    });
    const a = t.sim.keys.a!;
    const b = t.sim.keys.b!;
    expect(
      (await t.raw('POST', '/images', { key: a, body: imageBody(), headers: { 'idempotency-key': newKey() } })).status,
    ).toBe(202);
    const meB = (await t.raw('GET', '/me', { key: b })).json;
    expect(meB.credits).toBe(1000 - 8);
    expect(meB.limits).toMatchObject({
      dailyCredits: 300,
      dailyCreditsUsed: 0,
      submissionsPerWindow: 2,
      imagesInFlight: 1,
    });
    expect((await t.raw('GET', '/me', { key: a })).json.limits).toMatchObject({
      dailyCredits: 500,
      dailyCreditsUsed: 8,
      submissionsPerWindow: 10,
      imagesInFlight: 10,
    });
    // b's one image slot is its own: a's job does not take it, b's first does.
    expect(
      (await t.raw('POST', '/images', { key: b, body: imageBody(), headers: { 'idempotency-key': newKey() } })).status,
    ).toBe(202);
    const second = await t.raw('POST', '/images', {
      key: b,
      body: imageBody(),
      headers: { 'idempotency-key': newKey() },
    });
    expect(second.status).toBe(429);
    expect(second.json.error.code).toBe('CONCURRENCY_LIMIT');
  });

  it('with --job-visibility key, reads the strictest way where the spec is silent: a job, its listing and an upload belong to the key that made them, and an idempotency key is scoped to its API key', async () => {
    const t = await startTestSim({ keys: [{ label: 'a' }, { label: 'b' }], jobVisibility: 'key' });
    const a = t.sim.keys.a!;
    const b = t.sim.keys.b!;
    const idem = newKey();
    const made = await t.raw('POST', '/images', { key: a, body: imageBody(), headers: { 'idempotency-key': idem } });
    expect(made.status).toBe(202);
    expect((await t.raw('GET', `/jobs/${made.json.job.id}`, { key: a })).status).toBe(200);
    expect((await t.raw('GET', `/jobs/${made.json.job.id}`, { key: b })).status).toBe(404);
    const apiJobs = async (key: string) =>
      (await t.raw('GET', '/jobs', { key })).json.jobs
        .filter((j: { origin: string }) => j.origin === 'api')
        .map((j: { id: string }) => j.id);
    expect(await apiJobs(b)).toEqual([]);
    expect(await apiJobs(a)).toEqual([made.json.job.id]);

    // The same idempotency key sent with the other API key is a new job, charged again: why genbatch never resends an attempt with another key.
    const other = await t.raw('POST', '/images', { key: b, body: imageBody(), headers: { 'idempotency-key': idem } });
    expect(other.status).toBe(202);
    expect(other.json.job.id).not.toBe(made.json.job.id);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(2);

    const grant = await t.raw('POST', '/uploads', {
      key: a,
      body: { kind: 'image', target: 'image', contentType: 'image/png', size: PNG_1PX.length },
    });
    expect(grant.status).toBe(200);
    const upload = grant.json.upload ?? grant.json;
    expect(
      (await fetch(upload.uploadUrl, { method: 'PUT', headers: { 'content-type': 'image/png' }, body: PNG_1PX })).ok,
    ).toBe(true);
    const edit = (key: string) =>
      t.raw('POST', '/images', {
        key,
        body: { ...imageBody('the same mug in blue', 'studio-edit'), inputs: [{ key: upload.key }] },
        headers: { 'idempotency-key': newKey() },
      });
    const refused = await edit(b);
    expect(refused.status).toBe(400);
    expect(JSON.stringify(refused.json)).toMatch(/unknown upload key/);
    expect((await edit(a)).status).toBe(202);
  });

  it('names the key a request came with in its ledger even when it refuses that key, so a test can tell which key sent what', async () => {
    const t = await startTestSim({ keys: [{ label: 'a' }, { label: 'b' }] });
    const idem = newKey();
    expect(
      (await t.raw('POST', '/images', { key: t.sim.keys.a!, body: imageBody(), headers: { 'idempotency-key': idem } }))
        .status,
    ).toBe(202);
    t.sim.service.accounts.byLabel('a').revoked = true;
    expect(
      (await t.raw('POST', '/images', { key: t.sim.keys.a!, body: imageBody(), headers: { 'idempotency-key': idem } }))
        .status,
    ).toBe(401);
    expect((await t.raw('GET', '/me', { key: 'sk_test_not_a_key_of_this_account' })).status).toBe(401);
    const requests = t.sim.service.ledger.of('request');
    expect(requests.filter((r) => r.idempotencyKey === idem).map((r) => [r.key, r.status])).toEqual([
      ['a', 202],
      ['a', 401],
    ]);
    expect(requests.at(-1)).toMatchObject({ key: null, status: 401 });
  });

  it('genbatch simulate --keys N serves N keys of one account', () => {
    expect(simulatorOptions({ keys: 3, dailyCap: 700 }).keys).toEqual([
      { label: 'main', dailyCap: 700 },
      { label: 'key2', dailyCap: 700 },
      { label: 'key3', dailyCap: 700 },
    ]);
  });
});
