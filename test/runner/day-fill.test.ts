import { describe, expect, it } from 'vitest';
import { runCliInProcess } from '../helpers/cli.js';
import { expectNoDoubleChargeAndVerifiedOutputs, workspace } from '../helpers/run.js';
import { startTestSim } from '../helpers/sim.js';

// A key day of 4 s of real time: the test sees a day turn in a few seconds.
const SCALE = 21_600;
const DAY_MS = 86_400_000 / SCALE; // the simulator counts key days in real time, scaled

describe('every key day filled', () => {
  it('a cap that leaves room for two small items but not a large one sends the two small ones the same day', async () => {
    const t = await startTestSim({ timeScale: SCALE, keys: [{ label: 'main', dailyCap: 20 }], imageSeconds: [10, 10] });
    // In order: three large (8 credits), two small (2), one large. A cap of 20: two large (16), then the two small
    // ones fill the day (20); the third large waits for the next day. With one slot, a large item given out to wait
    // at its gate for the next day would hold it: the small ones must go before it, not after.
    const items = ['xl', 'xl', 'xl', 'lite', 'lite', 'xl']
      .map((m, i) => `  - { id: item-${i}, model: studio-${m}, prompt: "product ${i}" }`)
      .join('\n');
    const ws = workspace(t.sim, `version: 1\nitems:\n${items}\n`, {}, SCALE);
    // The estimate plans the same two days.
    const estimate = await runCliInProcess(['estimate', 'm.yaml', '--json', '--daily-cap', '20'], ws.env, ws.dir);
    expect(estimate.stderr).toBe('');
    const plan = JSON.parse(estimate.stdout).plan;
    expect(plan.days.map((d: { keys: { items: number; credits: number }[] }) => d.keys[0])).toMatchObject([
      { items: 4, credits: 20 },
      { items: 2, credits: 16 },
    ]);
    expect(plan.endsOnDay).toBe(2);
    // Started as a key day begins: the run's first four items need a fraction of the day's 4 s, but a run started
    // in the day's last tenth would see it turn after one item, whatever the scheduler does.
    await new Promise((resolve) => setTimeout(resolve, DAY_MS - (Date.now() % DAY_MS) + 10));
    const res = await ws.run(['--daily-cap', '20', '--max-images-in-flight', '1']);
    expect(res.code, res.stdout + res.stderr).toBe(0);
    const charges = t.sim.service.ledger.of('charge').map((c) => ({
      item: c.prompt!.replace('product ', 'item-'),
      day: Math.floor(c.at / DAY_MS),
      credits: c.credits,
    }));
    const firstDay = Math.min(...charges.map((c) => c.day));
    const onFirstDay = charges.filter((c) => c.day === firstDay);
    expect(onFirstDay.map((c) => c.item).sort()).toEqual(['item-0', 'item-1', 'item-3', 'item-4']);
    expect(onFirstDay.reduce((n, c) => n + c.credits, 0)).toBe(20);
    expect(charges.filter((c) => c.day === firstDay + 1).map((c) => c.item)).toEqual(['item-2', 'item-5']);
    expectNoDoubleChargeAndVerifiedOutputs(t.sim, ws);
  });
});
