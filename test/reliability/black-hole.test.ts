import { describe, expect, it, vi } from 'vitest';
import { expectNoDoubleChargeAndVerifiedOutputs, imageManifest, workspace } from '../helpers/run.js';
import { runCliInProcess } from '../helpers/cli.js';
import { startTestSim } from '../helpers/sim.js';
import { posts, watchOutage } from '../helpers/outage.js';

// The service's silent failures, apart from outage.test.ts so the two files run side by side.
describe('a service that swallows requests, or stays away', () => {
  it('a black hole: the requests it swallowed are abandoned once the service answers again and resent at once', {
    timeout: 60_000,
  }, async () => {
    const t = await startTestSim({ timeScale: 60, outages: [{ atCharge: 8, seconds: 4, mode: 'blackhole' }] });
    const ws = workspace(t.sim, imageManifest(30), {}, 60);
    const outage = watchOutage(t);
    const run = await ws.run();
    const endedAt = Date.now();
    const backAt = outage.backAt();
    expect(run.code, run.stderr).toBe(0);
    expect(backAt).toBeDefined();
    const after = posts(t, backAt!);
    expect(after.length).toBeGreaterThan(0);
    expect(after[0]!.at - backAt!).toBeLessThan(2_000);
    // Not a request waited out its own timeout (30 s, and a long poll's wait on top).
    expect(endedAt - backAt!).toBeLessThan(8_000);
    const charges = t.sim.service.ledger.of('charge');
    expect(charges).toHaveLength(30);
    expect(new Set(charges.map((c) => c.idempotencyKey)).size).toBe(30);
    expect(t.sim.service.ledger.countStatus(429)).toBe(0);
    expectNoDoubleChargeAndVerifiedOutputs(t.sim, ws);
    expect(run.stderr).toMatch(/service is unreachable/i);
    expect(run.stderr).not.toMatch(/nothing moved/);
  });

  it('a black hole too short to be seen: what it swallowed is given up as lost while the service answers others', {
    timeout: 30_000,
  }, async () => {
    const t = await startTestSim({ timeScale: 600, outages: [{ atCharge: 4, seconds: 0.3, mode: 'blackhole' }] });
    const ws = workspace(t.sim, imageManifest(12));
    const startedAt = Date.now();
    const run = await ws.run();
    expect(run.code, run.stderr).toBe(0);
    // Not the 30 s a swallowed request would wait for its own timeout.
    expect(Date.now() - startedAt).toBeLessThan(10_000);
    const charges = t.sim.service.ledger.of('charge');
    expect(new Set(charges.map((c) => c.idempotencyKey)).size).toBe(12);
    expect(charges).toHaveLength(12);
    expectNoDoubleChargeAndVerifiedOutputs(t.sim, ws);
  });

  it('a run started in a black hole asks again rather than wait 30 s for answers that never come', {
    timeout: 30_000,
  }, async () => {
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(t.sim, imageManifest(3));
    await t.sim.outage('blackhole');
    const backAt = Date.now() + 1_000;
    setTimeout(() => void t.sim.restore(), 1_000);
    const run = await ws.run();
    expect(run.code, run.stderr).toBe(0);
    // Its swallowed start-up requests were asked again within 5 s: not the client's 30 s.
    expect(Date.now() - backAt).toBeLessThan(8_000);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(3);
    expectNoDoubleChargeAndVerifiedOutputs(t.sim, ws);
  });

  it.each(['refuse', 'blackhole'] as const)(
    'unreachable past --unreachable-minutes (%s): exit 4 at once saying since when, nothing lost; the same command then finishes without paying twice',
    {
      timeout: 60_000,
    },
    async (mode) => {
      const t = await startTestSim({ timeScale: 60 });
      const ws = workspace(t.sim, imageManifest(12), {}, 60);
      // The service dies as it charges the 5th job (its answer is lost) and stays away.
      const unwatch = t.sim.service.ledger.watch((e) => {
        if (e.kind === 'charge' && t.sim.service.ledger.of('charge').length === 5) void t.sim.outage(mode);
      });
      const startedAt = Date.now();
      const running = ws.run(['--unreachable-minutes', '0.05']);
      // Meanwhile status says why the run is quiet: since when nothing answers, and what each state waits for.
      let status: any;
      await vi.waitFor(
        async () => {
          const out = await runCliInProcess(['status', 'm.yaml', '--json'], ws.env, ws.dir);
          status = JSON.parse(out.stdout);
          expect(status.run.unreachableSince).not.toBeNull();
        },
        { timeout: 10_000, interval: 100 },
      );
      expect(status.run.running).toBe(true);
      expect(status.waiting.length).toBeGreaterThan(0);
      for (const w of status.waiting)
        expect(w.for).toMatch(/the service to answer again|backoff|its time to be resent/);
      const first = await running;
      unwatch();
      expect(first.code, first.stderr).toBe(4);
      // 3 s unreachable, then the requests on the wire are given up: none waits out its own 30 s timeout.
      expect(Date.now() - startedAt).toBeLessThan(10_000);
      expect(first.stderr).toMatch(/answered nothing since \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC/);
      expect(first.stderr).toMatch(/Nothing paid is lost/);
      const charged = t.sim.service.ledger.of('charge').length;
      expect(charged).toBe(5);
      await t.sim.restore();
      const second = await ws.run();
      expect(second.code, second.stderr).toBe(0);
      const charges = t.sim.service.ledger.of('charge');
      expect(charges).toHaveLength(12);
      expect(new Set(charges.map((c) => c.idempotencyKey)).size).toBe(12);
      expectNoDoubleChargeAndVerifiedOutputs(t.sim, ws);
    },
  );
});
