import { describe, expect, it } from 'vitest';
import type { SimResponse } from '../../src/simulator/types.js';
import { makePng } from '../../src/simulator/media.js';
import { expectNoDoubleChargeAndVerifiedOutputs, readState, workspace } from '../helpers/run.js';
import { startTestSim, type TestSim } from '../helpers/sim.js';

/** A catalog that, like another reading of the spec, shows no video prices. */
function hideVideoPrices(t: TestSim): void {
  const strip = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(strip)
      : v && typeof v === 'object'
        ? Object.fromEntries(
            Object.entries(v)
              .filter(([k]) => k !== 'prices')
              .map(([k, x]) => [k, strip(x)]),
          )
        : v;
  t.sim.service.tamper = (req, res): SimResponse | undefined =>
    req.method === 'GET' && req.path.startsWith('/models') ? { ...res, body: strip(res.body) } : undefined;
}

const videos = (n: number) =>
  `version: 1\ndefaults: { type: video, model: motion-2, duration: 5, resolution: 720p, aspectRatio: "16:9" }\nitems:\n${Array.from({ length: n }, (_, i) => `  - { id: spin-${i}, prompt: "spin ${i}", image: mug.png }`).join('\n')}\n`;

describe('items whose price nothing shows', () => {
  it('a budget run does not start them, and says how to give a price; nothing is charged', async () => {
    const t = await startTestSim({ timeScale: 600 });
    hideVideoPrices(t);
    const ws = workspace(t.sim, videos(2), { 'mug.png': makePng('mug') });
    const res = await ws.run(['--max-credits', '1000']);
    expect(res.code).toBe(1);
    expect(readState(ws.statePath).items.map((i) => [i.state, i.error_code])).toEqual([
      ['skipped', 'PRICE_UNKNOWN'],
      ['skipped', 'PRICE_UNKNOWN'],
    ]);
    expect(res.stdout + res.stderr).toContain('prices: { motion-2: credits }');
    expect(t.sim.service.ledger.of('charge')).toHaveLength(0);
  });

  it('the daily cap still holds: the first job goes alone, and its charge is the bound the others reserve', async () => {
    // A key day lasts 2 s; motion-2 at 5 s 720p costs 100: a cap of 250 takes two a day, never three.
    const t = await startTestSim({
      timeScale: 43_200,
      linkTtlSeconds: 7 * 86_400,
      uploadTtlSeconds: 7 * 86_400,
      videoSeconds: [60, 60],
    });
    hideVideoPrices(t);
    const ws = workspace(t.sim, videos(5), { 'mug.png': makePng('mug') }, 43_200);
    const res = await ws.run(['--daily-cap', '250']);
    expect(res.code, res.stdout).toBe(0);
    const charges = t.sim.service.ledger.of('charge');
    expect(charges).toHaveLength(5);
    const perDay = new Map<number, number>();
    for (const c of charges)
      perDay.set(Math.floor(c.at / 2000), (perDay.get(Math.floor(c.at / 2000)) ?? 0) + c.credits);
    expect(Math.max(...perDay.values())).toBeLessThanOrEqual(250);
    expect(res.stdout + res.stderr).toContain('no price is known for motion-2');
    expectNoDoubleChargeAndVerifiedOutputs(t.sim, ws);
  });
});
