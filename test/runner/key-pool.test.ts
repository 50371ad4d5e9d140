import { describe, expect, it } from 'vitest';
import { keyFingerprint } from '../../src/api/key-pool.js';
import type { RunningSimulator } from '../../src/simulator/index.js';
import { runCli, runCliInProcess } from '../helpers/cli.js';
import { expectKeyNowhere, imageManifest, readState, workspace } from '../helpers/run.js';
import { startTestSim } from '../helpers/sim.js';

/** Each idempotency key the service saw, with every API key (by label) that sent it. */
function keysPerAttempt(sim: RunningSimulator): Map<string, Set<string | null>> {
  const seen = new Map<string, Set<string | null>>();
  for (const r of sim.service.ledger.of('request')) {
    if (!r.idempotencyKey) continue;
    seen.set(r.idempotencyKey, (seen.get(r.idempotencyKey) ?? new Set()).add(r.key));
  }
  return seen;
}

function chargesBy(sim: RunningSimulator): Record<string, number> {
  const by: Record<string, number> = {};
  for (const c of sim.service.ledger.of('charge')) by[c.key] = (by[c.key] ?? 0) + 1;
  return by;
}

const poolEnv = (env: NodeJS.ProcessEnv, sim: RunningSimulator, labels: string[]) => ({
  ...env,
  GENBATCH_API_KEY: '',
  GENBATCH_API_KEYS: labels.map((l) => sim.keys[l]).join(','),
});

describe('a key pool (GENBATCH_API_KEYS)', () => {
  it('spreads one manifest over every key, each within its own limits and cap as its /me shows them, and never sends an attempt with a second key', async () => {
    const t = await startTestSim({
      timeScale: 600,
      keys: [
        { label: 'a' },
        // b: a lower daily cap; c: lower limits than the flags (and the spec's defaults) say.
        { label: 'b', dailyCap: 8 },
        { label: 'c', limits: { submissionsPerWindow: 3, imagesInFlight: 2 } },
      ],
    });
    const ws = workspace(t.sim, imageManifest(36));
    const env = poolEnv(ws.env, t.sim, ['a', 'b', 'c']);
    const res = await runCliInProcess(ws.args(), env, ws.dir);
    expect(res.code, res.stdout + res.stderr).toBe(0);
    expect(res.stderr).toMatch(/3 keys: /);
    expect(readState(ws.statePath).items.every((i) => i.state === 'done')).toBe(true);
    // Every item charged once, by every key, and not one 429: each key was paced to its own limits and cap.
    const charges = t.sim.service.ledger.of('charge');
    expect(new Set(charges.map((c) => c.prompt)).size).toBe(36);
    expect(charges).toHaveLength(36);
    const by = chargesBy(t.sim);
    expect(Object.keys(by).sort()).toEqual(['a', 'b', 'c']);
    // b's cap of 8 credits (4 jobs) in each of its key days (144 s at 600x; a run may cross one).
    const bDays = new Map<number, number>();
    for (const c of charges.filter((c) => c.key === 'b'))
      bDays.set(Math.floor(c.at / 144_000), (bDays.get(Math.floor(c.at / 144_000)) ?? 0) + c.credits);
    for (const credits of bDays.values()) expect(credits).toBeLessThanOrEqual(8);
    expect(t.sim.service.ledger.countStatus(429)).toBe(0);
    for (const labels of keysPerAttempt(t.sim).values()) expect(labels.size).toBe(1);
    // The state names each attempt's key by fingerprint; the keys themselves are nowhere.
    const fpOf: Record<string, string> = Object.fromEntries(
      ['a', 'b', 'c'].map((l) => [keyFingerprint(t.sim.keys[l]!), l]),
    );
    const byIdem = new Map(charges.map((c) => [c.idempotencyKey, c.key]));
    for (const a of readState(ws.statePath).attempts as unknown as { idempotency_key: string; key_fp: string }[]) {
      if (byIdem.has(a.idempotency_key)) expect(fpOf[a.key_fp]).toBe(byIdem.get(a.idempotency_key));
    }
    // The live line names each key's open items; status and estimate speak of each key.
    expect(res.stderr).toMatch(/keys [0-9a-f]{6} \d+, [0-9a-f]{6} \d+, [0-9a-f]{6} \d+/);
    const status = JSON.parse((await runCliInProcess(['status', 'm.yaml', '--json'], env, ws.dir)).stdout) as {
      keys: { fingerprint: string; jobs: number; charged: number; open: number }[];
    };
    expect(Object.fromEntries(status.keys.map((k) => [fpOf[k.fingerprint], k.jobs]))).toEqual(by);
    expect(status.keys.reduce((n, k) => n + k.charged, 0)).toBe(72);
    expect((await runCliInProcess(['status', 'm.yaml'], env, ws.dir)).stdout).toMatch(
      /key +jobs +credits net +today +open/,
    );
    const estimate = JSON.parse((await runCliInProcess(['estimate', 'm.yaml', '--json'], env, ws.dir)).stdout) as {
      dailyCap: { credits: number; keys: number; largestKey: number };
      keys: { dailyCap: number; submitRate: string }[];
    };
    expect(estimate.dailyCap).toMatchObject({ credits: 40_008, keys: 3, largestKey: 20_000 });
    expect(estimate.keys.map((k) => [k.dailyCap, k.submitRate])).toEqual([
      [20_000, '10/60s'],
      [8, '10/60s'],
      [20_000, '3/60s'],
    ]);
    for (const key of Object.values(t.sim.keys)) expectKeyNowhere(ws.dir, key);
  });

  it('a key revoked mid-run leaves the pool: the others finish the manifest, what it sent waits for it (named, maybe-accepted included), and nothing is paid twice', async () => {
    // Jobs run 1–1.5 s, so the revoked key still has paid jobs running when it is refused.
    const t = await startTestSim({ timeScale: 600, keys: [{ label: 'a' }, { label: 'b' }], imageSeconds: [600, 900] });
    const ws = workspace(
      t.sim,
      imageManifest(20, (i) => (i === 0 ? 'product 0 [sim:drop]' : `product ${i}`)),
    );
    const env = poolEnv(ws.env, t.sim, ['a', 'b']);
    // The key whose answer to item-0 is lost is revoked that instant: its resend can only be refused.
    let revoked: string | undefined;
    const unwatch = t.sim.service.ledger.watch((event) => {
      if (event.kind === 'dropped-response' && !revoked) {
        revoked = event.key;
        t.sim.service.accounts.byLabel(event.key).revoked = true;
      }
    });
    const first = await runCliInProcess(ws.args(), env, ws.dir);
    unwatch();
    const fp = keyFingerprint(t.sim.keys[revoked!]!);
    const other = revoked === 'a' ? 'b' : 'a';
    // Items wait for the refused key, so the run is not complete; it did not stop early.
    expect(first.code, first.stdout + first.stderr).toBe(1);
    const state = readState(ws.statePath);
    const waiting = state.items.filter((i) => i.state !== 'done');
    expect(waiting.length).toBeGreaterThanOrEqual(1);
    expect(first.stdout).toContain(`the key ${fp} was refused during the run (UNAUTHENTICATED`);
    expect(first.stdout).toContain(`${waiting.length} item${waiting.length === 1 ? '' : 's'} sent with it wait`);
    // item-0 may have been accepted (its answer was lost): held for its key, never resent with the other.
    expect(state.items.find((i) => i.id === 'item-0')).toMatchObject({
      state: 'maybe_accepted',
      error_code: 'KEY_REFUSED',
    });
    for (const w of waiting) expect(w.error_code).toBe('KEY_REFUSED');
    // The other key took everything the refused one had not sent.
    expect(t.sim.service.ledger.of('charge').filter((c) => c.key === other).length).toBe(20 - waiting.length);
    for (const labels of keysPerAttempt(t.sim).values()) expect(labels.size).toBe(1);

    // Once the key works again, the same command finishes what it had: not one item is paid for twice.
    t.sim.service.accounts.byLabel(revoked!).revoked = false;
    const second = await runCliInProcess(ws.args(), env, ws.dir);
    expect(second.code, second.stdout + second.stderr).toBe(0);
    expect(readState(ws.statePath).items.every((i) => i.state === 'done')).toBe(true);
    const charges = t.sim.service.ledger.of('charge');
    expect(charges).toHaveLength(20);
    expect(new Set(charges.map((c) => c.prompt)).size).toBe(20);
    for (const labels of keysPerAttempt(t.sim).values()) expect(labels.size).toBe(1);
  });

  it('a key the service refuses at the start is left out, and the run goes on with the others; with none left it stops (exit 3) having sent nothing', async () => {
    const t = await startTestSim({ timeScale: 600, keys: [{ label: 'a' }, { label: 'b' }] });
    t.sim.service.accounts.byLabel('a').revoked = true;
    const ws = workspace(t.sim, imageManifest(4));
    const res = await runCli(ws.args(), poolEnv(ws.env, t.sim, ['a', 'b']), ws.dir);
    expect(res.code, res.stdout + res.stderr).toBe(0);
    expect(res.stderr).toContain(`the key ${keyFingerprint(t.sim.keys.a!)} was refused (UNAUTHENTICATED`);
    expect(chargesBy(t.sim)).toEqual({ b: 4 });

    t.sim.service.accounts.byLabel('b').revoked = true;
    const ws2 = workspace(t.sim, imageManifest(2));
    const none = await runCli(ws2.args(), poolEnv(ws2.env, t.sim, ['a', 'b']), ws2.dir);
    expect(none.code).toBe(3);
    expect(none.stderr).toMatch(/refused every key/);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(4);
  });

  it('every command takes the pool: validate --online checks scopes against what the keys may do together, models asks the first key, and run gives each item to a key with its scope', async () => {
    const t = await startTestSim({
      timeScale: 600,
      keys: [
        { label: 'a', scopes: ['image'] },
        { label: 'b', scopes: ['video'] },
      ],
    });
    const ws = workspace(
      t.sim,
      'version: 1\nitems:\n  - { id: still, model: studio-lite, prompt: a mug }\n  - { id: clip, type: video, model: motion-2, prompt: a spin, duration: 5, resolution: 720p, aspectRatio: "16:9", image: { from: still } }\n',
    );
    const env = poolEnv(ws.env, t.sim, ['a', 'b']);
    const online = await runCliInProcess(['validate', 'm.yaml', '--online'], env, ws.dir);
    expect(online.code, online.stdout + online.stderr).toBe(0);
    // Either key alone lacks a scope the manifest needs.
    const alone = await runCliInProcess(['validate', 'm.yaml', '--online'], poolEnv(ws.env, t.sim, ['a']), ws.dir);
    expect(alone.code).toBe(2);
    expect(alone.stdout + alone.stderr).toMatch(/video/);
    const models = await runCliInProcess(['models', '--type', 'image'], env, ws.dir);
    expect(models.code, models.stderr).toBe(0);
    expect(models.stdout).toContain('studio-lite');
    expect(t.sim.service.ledger.of('charge')).toEqual([]);
    // And the run gives each item to a key that may submit it.
    const run = await runCliInProcess(ws.args(), env, ws.dir);
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(t.sim.service.ledger.of('charge').map((c) => [c.prompt, c.key])).toEqual([
      ['a mug', 'a'],
      ['a spin', 'b'],
    ]);
    expect(t.sim.service.ledger.of('request').filter((r) => r.code === 'SCOPE_DENIED')).toEqual([]);
  });
});
