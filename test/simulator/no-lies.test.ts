import { describe, expect, it } from 'vitest';
import { simulatorOptions } from '../../src/cli/commands/simulate.js';
import { keyDailyCap, revokeAfter, scopes } from '../../src/options/parse.js';
import { moderates } from '../../src/simulator/submissions.js';
import { runCliInProcess } from '../helpers/cli.js';
import { imageBody, newKey, startTestSim } from '../helpers/sim.js';

const videoBody = { prompt: 'a slow pan', model: 'motion-2', duration: '5', resolution: '720p', aspectRatio: '16:9' };

describe('the simulator tells no lies', () => {
  it('moderation judges the prompt: the same prompt sent with fresh keys is blocked every time, or never', async () => {
    const t = await startTestSim({ moderationRate: 0.5, seed: 3 });
    const outcomes = async (prompt: string) => {
      const statuses: number[] = [];
      for (let i = 0; i < 8; i++)
        statuses.push(
          (await t.raw('POST', '/images', { body: imageBody(prompt), headers: { 'idempotency-key': newKey() } }))
            .status,
        );
      return new Set(statuses);
    };
    // One prompt the seed blocks and one it lets through: each answered the same way eight times.
    const prompts = Array.from({ length: 40 }, (_, i) => `a ceramic mug, take ${i}`);
    const blocked = prompts.find((p) => moderates(3, p, 0.5))!;
    const allowed = prompts.find((p) => !moderates(3, p, 0.5))!;
    expect(await outcomes(blocked)).toEqual(new Set([422]));
    expect((await outcomes(allowed)).has(422)).toBe(false);
    // The rate is the share of prompts blocked.
    const share =
      Array.from({ length: 2000 }, (_, i) => moderates(3, `prompt ${i}`, 0.5)).filter(Boolean).length / 2000;
    expect(share).toBeGreaterThan(0.45);
    expect(share).toBeLessThan(0.55);
  });

  it('--scopes makes an image-only key: a video submission is SCOPE_DENIED (403), with the spec error body', async () => {
    const t = await startTestSim(simulatorOptions({ scopes: scopes('image') }));
    const res = await t.raw('POST', '/videos', { body: videoBody, headers: { 'idempotency-key': newKey() } });
    expect(res.status).toBe(403);
    expect(res.json.error).toMatchObject({ code: 'SCOPE_DENIED', message: expect.any(String) });
    expect((await t.raw('GET', '/me')).json.scopes).toEqual(['image']);
    // Per key, in order.
    const two = simulatorOptions({ keys: 2, scopes: scopes('video', scopes('image')) });
    expect(two.keys!.map((k) => k.scopes)).toEqual([['image'], ['video']]);
    expect(() => simulatorOptions({ keys: 3, scopes: scopes('video', scopes('image')) })).toThrow(
      /given 2 times for 3 keys/,
    );
  });

  it('--revoke-after N: the key works for N requests, then every request is 401 UNAUTHENTICATED', async () => {
    const t = await startTestSim(simulatorOptions({ revokeAfter: revokeAfter('3') }));
    const statuses = [];
    for (let i = 0; i < 5; i++) statuses.push((await t.raw('GET', '/me')).status);
    expect(statuses).toEqual([200, 200, 200, 401, 401]);
    expect((await t.raw('GET', '/models?type=image')).json.error.code).toBe('UNAUTHENTICATED');
    expect(
      simulatorOptions({ keys: 2, revokeAfter: revokeAfter('7:2') }).keys!.map((k) => k.revokeAfterRequests),
    ).toEqual([undefined, 7]);
    expect(() => simulatorOptions({ keys: 1, revokeAfter: revokeAfter('7:2') })).toThrow(/names key 2/);
  });

  it.each([
    ['not-eligible', 'API_NOT_ELIGIBLE'],
    ['api-disabled', 'API_DISABLED'],
    ['suspended', 'ACCOUNT_SUSPENDED'],
  ] as const)('--account-state %s: every request is 403 %s', async (state, code) => {
    const t = await startTestSim(simulatorOptions({ accountState: state }));
    for (const res of [
      await t.raw('GET', '/me'),
      await t.raw('POST', '/images', { body: imageBody(), headers: { 'idempotency-key': newKey() } }),
    ]) {
      expect(res.status).toBe(403);
      expect(res.json.error.code).toBe(code);
    }
    expect(t.sim.service.ledger.of('charge')).toHaveLength(0);
  });

  it('--daily-cap above 20,000 (more than a real key can have) is refused with why', async () => {
    expect(keyDailyCap('20000')).toBe(20_000);
    expect(() => keyDailyCap('20001')).toThrow(/at most 20,000/);
    const res = await runCliInProcess(['simulate', '--daily-cap', '50000']);
    expect(res.code).toBe(2);
    expect(res.stderr).toMatch(/at most 20,000/);
  });

  it.each(['account', 'key'] as const)(
    'with job visibility %s, every job a key lists it can read, and no other',
    async (visibility) => {
      const t = await startTestSim({ keys: [{ label: 'a' }, { label: 'b' }], jobVisibility: visibility, webJobs: 2 });
      const [a, b] = [t.sim.keys.a!, t.sim.keys.b!];
      const made = (
        await t.raw('POST', '/images', { key: a, body: imageBody(), headers: { 'idempotency-key': newKey() } })
      ).json.job.id as string;
      for (const key of [a, b]) {
        const listed = (await t.raw('GET', '/jobs?limit=100', { key })).json.jobs.map(
          (j: { id: string }) => j.id,
        ) as string[];
        for (const id of listed)
          expect((await t.raw('GET', `/jobs/${id}`, { key })).status, `${id} listed but not readable`).toBe(200);
        for (const id of [...t.sim.service.jobs.byId.keys()].filter((id) => !listed.includes(id)))
          expect((await t.raw('GET', `/jobs/${id}`, { key })).status, `${id} readable but not listed`).toBe(404);
        // The web application's jobs are the account's, listed for each key.
        expect(listed.filter((id) => id.startsWith('job_web_'))).toHaveLength(2);
        expect(listed.includes(made)).toBe(visibility === 'account' || key === a);
      }
    },
  );

  it("/me's key prefix is the part before the underscore only, and /me says its durations are the service's time", async () => {
    const t = await startTestSim({ timeScale: 60, announce: true });
    const me = (await t.raw('GET', '/me')).json;
    expect(me.key.prefix).toBe('gbk_');
    expect(t.sim.apiKey.startsWith(me.key.prefix)).toBe(true);
    expect(me.limits.windowSeconds).toBe(60);
    expect(me['x-simulator'].timeScale).toBe(60);
    expect(me['x-simulator'].units).toMatch(/service's time/);
  });

  it('the prompt and upload limits, simulator choices, can be changed by flags', async () => {
    const opts = simulatorOptions({ maxPromptLength: 50, maxImageUploadMb: 1, maxVideoUploadMb: 2 });
    expect(opts.limits).toEqual({
      maxPromptLength: 50,
      maxImageUploadBytes: 1024 * 1024,
      maxVideoUploadBytes: 2 * 1024 * 1024,
    });
    const t = await startTestSim(opts);
    const res = await t.raw('POST', '/images', {
      body: imageBody('x'.repeat(51)),
      headers: { 'idempotency-key': newKey() },
    });
    expect(res.status).toBe(400);
    expect(res.json.error.details.field).toBe('prompt');
    const grant = await t.raw('POST', '/uploads', {
      body: { kind: 'image', target: 'image', contentType: 'image/png', size: 1024 * 1024 + 1 },
    });
    expect(grant.status).toBe(400);
    expect(grant.json.error.details.field).toBe('size');
  });
});
