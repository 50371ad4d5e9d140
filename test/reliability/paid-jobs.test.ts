import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { SimResponse } from '../../src/simulator/types.js';
import { runCliInProcess } from '../helpers/cli.js';
import { MUG } from '../helpers/manifests.js';
import { expectNoDoubleChargeAndVerifiedOutputs, imageManifest, readState, workspace } from '../helpers/run.js';
import { startTestSim } from '../helpers/sim.js';

const error = (status: number, code: string, details: Record<string, unknown> = {}): SimResponse => ({
  status,
  headers: {},
  body: { error: { code, message: `injected ${code}`, details } },
});
const charges = (t: Awaited<ReturnType<typeof startTestSim>>) => t.sim.service.ledger.of('charge');

describe('a paid job is never paid twice and never abandoned', () => {
  it('202s that stay unreadable leave the attempt "maybe accepted": retry does not replace it, and the next run resends the same key', async () => {
    const t = await startTestSim({ timeScale: 600 });
    t.sim.service.tamper = (req) =>
      req.method === 'POST' && req.path === '/images' ? { status: 202, headers: {}, body: {} } : undefined;
    const ws = workspace(t.sim, imageManifest(1));
    const first = await ws.run();
    expect(first.code, first.stdout).toBe(1);
    expect(charges(t)).toHaveLength(1);
    const posts = t.sim.service.ledger.of('request').filter((r) => r.method === 'POST' && r.path === '/images');
    expect(posts.length).toBeGreaterThan(1);
    expect(new Set(posts.map((p) => p.idempotencyKey)).size).toBe(1);
    const state = readState(ws.statePath);
    expect(state.items[0]).toMatchObject({ state: 'maybe_accepted' });
    expect(state.attempts.map((a) => [a.status, a.job_id])).toEqual([['sent', null]]);

    // retry has nothing to put back: the attempt may have been accepted.
    const retry = await runCliInProcess(['retry', 'm.yaml'], ws.env, ws.dir);
    expect(retry.stdout).toMatch(/^0 items put back/);
    t.sim.service.tamper = undefined;
    const again = await ws.run();
    expect(again.code, again.stdout).toBe(0);
    expect(charges(t)).toHaveLength(1);
    expect(
      new Set(
        t.sim.service.ledger
          .of('request')
          .filter((r) => r.method === 'POST')
          .map((p) => p.idempotencyKey),
      ).size,
    ).toBe(1);
    expectNoDoubleChargeAndVerifiedOutputs(t.sim, ws);
  });

  it('a submission whose fate is open holds its in-flight slot while it waits: with one slot, the others go only once it is answered, and it is paid once', async () => {
    const t = await startTestSim({ timeScale: 600 });
    // item-0's job is being created: the service says "still in flight" to its first three sends.
    let firstKey: string | undefined;
    let inFlightAnswers = 0;
    t.sim.service.tamper = (req) => {
      if (req.method !== 'POST' || req.path !== '/images') return undefined;
      const key = String(req.headers['idempotency-key']);
      firstKey ??= key;
      if (key !== firstKey || inFlightAnswers >= 3) return undefined;
      inFlightAnswers++;
      return {
        status: 409,
        headers: { 'Retry-After': '0.5' },
        body: { error: { code: 'IDEMPOTENCY_IN_FLIGHT', message: 'injected', details: {} } },
      };
    };
    const ws = workspace(t.sim, imageManifest(3));
    const res = await ws.run(['--max-images-in-flight', '1']);
    expect(res.code, res.stdout).toBe(0);
    const keys = t.sim.service.ledger
      .of('request')
      .filter((r) => r.method === 'POST' && r.path === '/images')
      .map((r) => r.idempotencyKey);
    // Its four sends came first, one after the other: its wait kept the one slot (a job the service counts).
    expect(keys.slice(0, 4)).toEqual([firstKey, firstKey, firstKey, firstKey]);
    expect(new Set(keys.slice(4)).size).toBe(2);
    expect(keys.slice(4)).not.toContain(firstKey);
    expect(charges(t)).toHaveLength(3);
    expectNoDoubleChargeAndVerifiedOutputs(t.sim, ws);
  });

  it('a 403 on reading one job (not a key code) concerns that job: the others finish, the run is not stopped, a rerun fetches it', async () => {
    const t = await startTestSim({ timeScale: 600 });
    let forbidden: string | undefined;
    t.sim.service.inject = (req) => {
      const m = /^\/jobs\/([^/]+)$/.exec(req.path);
      if (!m) return undefined;
      forbidden ??= m[1];
      return m[1] === forbidden ? error(403, 'FORBIDDEN') : undefined;
    };
    const ws = workspace(t.sim, imageManifest(3));
    const res = await ws.run();
    expect(res.code, res.stdout).toBe(1);
    const states = readState(ws.statePath).items.map((i) => [i.state, i.error_code]);
    expect(states.filter(([s]) => s === 'done')).toHaveLength(2);
    expect(states.filter(([s]) => s === 'running')).toEqual([['running', 'FORBIDDEN']]);
    expect(charges(t)).toHaveLength(3);
    t.sim.service.inject = undefined;
    const again = await ws.run();
    expect(again.code, again.stdout).toBe(0);
    expect(charges(t)).toHaveLength(3);
    expectNoDoubleChargeAndVerifiedOutputs(t.sim, ws);
  });

  it('a service whose longest wait is shorter than asked (400 on `wait`): polls adapt and every paid job is downloaded', async () => {
    const t = await startTestSim({ timeScale: 600 });
    t.sim.service.inject = (req) =>
      req.path.startsWith('/jobs/') && Number(req.query.get('wait') ?? 0) > 10
        ? error(400, 'VALIDATION_ERROR', { field: 'wait', max: 10 })
        : undefined;
    const ws = workspace(t.sim, imageManifest(4));
    const res = await ws.run();
    expect(res.code, res.stdout).toBe(0);
    expect(charges(t)).toHaveLength(4);
    expectNoDoubleChargeAndVerifiedOutputs(t.sim, ws);
  });

  it('the same without the service naming its maximum: the wait is halved until it is accepted', async () => {
    const t = await startTestSim({ timeScale: 600 });
    t.sim.service.inject = (req) =>
      req.path.startsWith('/jobs/') && Number(req.query.get('wait') ?? 0) > 5
        ? error(400, 'VALIDATION_ERROR', { field: 'wait' })
        : undefined;
    const ws = workspace(t.sim, imageManifest(2));
    const res = await ws.run();
    expect(res.code, res.stdout).toBe(0);
    expect(charges(t)).toHaveLength(2);
    const waits = t.sim.service.ledger.of('request').filter((r) => r.path.startsWith('/jobs/') && r.status === 200);
    expect(waits.length).toBeGreaterThan(0);
  });
});

describe('a lost state file', () => {
  it('never pays twice: generations replay their jobs under the same keys, an item whose body carried fresh upload keys stops with what to do', async () => {
    const t = await startTestSim({ timeScale: 600, uploadTtlSeconds: 86_400 });
    const ws = workspace(
      t.sim,
      'version: 1\nitems:\n  - { id: plain, model: studio-lite, prompt: "a mug" }\n  - { id: edit, model: studio-edit, prompt: "matte black", inputs: [mug.png] }\n',
      { 'mug.png': MUG },
    );
    expect((await ws.run()).code).toBe(0);
    expect(charges(t)).toHaveLength(2);
    rmSync(join(ws.dir, '.genbatch'), { recursive: true });
    rmSync(ws.outDir, { recursive: true });

    const again = await ws.run();
    expect(again.code).toBe(1);
    expect(charges(t)).toHaveLength(2);
    const items = Object.fromEntries(readState(ws.statePath).items.map((i) => [i.id, [i.state, i.error_code]]));
    expect(items).toEqual({ plain: ['done', null], edit: ['failed', 'IDEMPOTENCY_KEY_REUSED'] });
    expect(again.stdout + again.stderr).toContain('genbatch retry <manifest> --id edit');

    // retry leaves it alone unless it is named: then it is the user's choice to pay again.
    const plainRetry = await runCliInProcess(['retry', 'm.yaml'], ws.env, ws.dir);
    expect(plainRetry.stdout).toMatch(/^0 items put back[\s\S]*key conflict[\s\S]*edit/);
    expect((await ws.run()).code).toBe(1);
    expect(charges(t)).toHaveLength(2);
    const named = await runCliInProcess(['retry', 'm.yaml', '--id', 'edit'], ws.env, ws.dir);
    expect(named.stdout).toMatch(/^1 item put back/);
    expect((await ws.run()).code).toBe(0);
    expect(charges(t)).toHaveLength(3);
    expect((await runCliInProcess(['retry', 'm.yaml', '--id', 'nope'], ws.env, ws.dir)).code).toBe(2);
  });
});
