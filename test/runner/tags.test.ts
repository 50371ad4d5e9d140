import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { exitCodeWithin, runCliInProcess } from '../helpers/cli.js';
import { expectNoDoubleChargeAndVerifiedOutputs, workspace } from '../helpers/run.js';
import { startTestSim, type TestSim } from '../helpers/sim.js';

/** The prompts the simulator charged for, sorted. */
const chargedPrompts = (t: TestSim): string[] =>
  t.sim.service.ledger
    .of('charge')
    .map((c) => c.prompt!)
    .sort();

const manifest = (extraTag = '') => `version: 1
defaults: { model: studio-lite }
items:
  - rows: rows.csv
    id: "sku-{{sku}}"
    prompt: "product {{sku}}"
    tags: ["{{brand}}", "catalog"${extraTag}]
`;
const rows = { 'rows.csv': 'sku,brand\n1,brand-a\n2,brand-b\n3,"brand-a,rush"\n4,brand-b\n' };

describe('tags', () => {
  it('run --only tag:NAME runs that tag; status and the results files count items and credits per tag; tags are not content', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(t.sim, manifest(), rows);
    const first = await ws.run(['--only', 'tag:brand-a']);
    expect(first.code, first.stderr).toBe(0);
    expect(chargedPrompts(t)).toEqual(['product 1', 'product 3']);
    expect((await ws.run()).code).toBe(0);

    const status = JSON.parse((await runCliInProcess(['status', 'm.yaml', '--json'], ws.env, ws.dir)).stdout);
    // studio-lite costs 2 a job: a tag's credits are its items' (an item with several tags counts in each).
    expect(status.tags).toEqual([
      { tag: 'brand-a', items: 2, done: 2, charged: 4, refunded: 0, net: 4 },
      { tag: 'brand-b', items: 2, done: 2, charged: 4, refunded: 0, net: 4 },
      { tag: 'catalog', items: 4, done: 4, charged: 8, refunded: 0, net: 8 },
      { tag: 'rush', items: 1, done: 1, charged: 2, refunded: 0, net: 2 },
    ]);
    expect((await runCliInProcess(['status', 'm.yaml'], ws.env, ws.dir)).stdout).toMatch(
      /tag\s+items\s+done\s+credits net\n.*brand-a\s+2\s+2\s+4/,
    );
    const results = readFileSync(join(ws.outDir, 'results.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(results.map((r) => r.tags)).toEqual([
      ['brand-a', 'catalog'],
      ['brand-b', 'catalog'],
      ['brand-a', 'rush', 'catalog'],
      ['brand-b', 'catalog'],
    ]);
    const csv = readFileSync(join(ws.outDir, 'results.csv'), 'utf8').split('\n');
    const tagsColumn = csv[0]!.split(',').indexOf('tags');
    expect(tagsColumn).toBeGreaterThan(0);
    expect(csv[3]!.split(',')[tagsColumn]).toBe('brand-a rush catalog');

    // A tag added later changes no item's content: nothing is resubmitted, nothing is reported changed.
    writeFileSync(join(ws.dir, 'm.yaml'), manifest(', "spring"'));
    const again = await ws.run();
    expect(again.code).toBe(0);
    expect(again.stdout).not.toMatch(/changed after they were submitted/);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(4);
    const tagged = JSON.parse((await runCliInProcess(['status', 'm.yaml', '--json'], ws.env, ws.dir)).stdout).tags.map(
      (x: { tag: string }) => x.tag,
    );
    expect(tagged).toContain('spring');
    expectNoDoubleChargeAndVerifiedOutputs(t.sim, ws);
  });

  it('a tag budget stops that tag only: its items stop at the budget, the others run, exit 3; an item with two tags counts in both', async () => {
    const t = await startTestSim({ timeScale: 600 });
    // studio-lite costs 2 a job: brand-a may spend 4 (two jobs), rush 2 (one job); item 3 is brand-a and rush.
    const budgeted = `version: 1
defaults: { model: studio-lite }
budget: { perTag: { brand-a: 4, rush: 2 } }
items:
  - rows: rows.csv
    id: "sku-{{sku}}"
    prompt: "product {{sku}}"
    tags: ["{{brand}}"]
`;
    const ws = workspace(t.sim, budgeted, {
      'rows.csv': 'sku,brand\n1,brand-a\n2,brand-b\n3,"brand-a,rush"\n4,brand-b\n5,brand-a\n6,rush\n7,brand-b\n',
    });
    // The estimate says it first: per tag, items, credits and the budget; the run cannot go as planned (exit 3).
    const estimate = await runCliInProcess(['estimate', 'm.yaml', '--json'], ws.env, ws.dir);
    expect(estimate.code, estimate.stderr).toBe(3);
    const planned = JSON.parse(estimate.stdout);
    expect(planned.tags).toEqual([
      { tag: 'brand-a', items: 3, credits: 6, unpriced: 0, budget: 4, gated: { items: 0, credits: 0 } },
      { tag: 'brand-b', items: 3, credits: 6, unpriced: 0, gated: { items: 0, credits: 0 } },
      { tag: 'rush', items: 2, credits: 4, unpriced: 0, budget: 2, gated: { items: 0, credits: 0 } },
    ]);
    expect(planned.blockers.map((b: { reason: string }) => b.reason)).toEqual(['tag-budget', 'tag-budget']);

    const first = await ws.run();
    expect(first.code, first.stdout + first.stderr).toBe(3);
    expect(first.stdout).toMatch(/the budget of tag brand-a \(4 credits\) is reached/);
    const charged = () => chargedPrompts(t);
    // brand-a: items 1 and 3 (4 credits); rush: item 3 is already its 2, so item 6 waits; brand-b all three.
    expect(charged()).toEqual(['product 1', 'product 2', 'product 3', 'product 4', 'product 7']);
    const status = JSON.parse((await runCliInProcess(['status', 'm.yaml', '--json'], ws.env, ws.dir)).stdout);
    expect(status.items.pending).toBe(2);
    expect(status.tags.find((x: { tag: string }) => x.tag === 'brand-a').net).toBe(4);
    expect(status.tags.find((x: { tag: string }) => x.tag === 'rush').net).toBe(2);
    const report = JSON.parse((await runCliInProcess(['report', 'm.yaml', '--json'], ws.env, ws.dir)).stdout);
    expect(report.tags.map((x: { tag: string; net: number }) => [x.tag, x.net])).toEqual([
      ['brand-a', 4],
      ['brand-b', 6],
      ['rush', 2],
    ]);

    // A larger budget: the same command sends what was held back, and nothing twice.
    writeFileSync(join(ws.dir, 'm.yaml'), budgeted.replace('brand-a: 4, rush: 2', 'brand-a: 6, rush: 4'));
    const second = await ws.run();
    expect(second.code, second.stdout + second.stderr).toBe(0);
    expect(charged()).toEqual([
      'product 1',
      'product 2',
      'product 3',
      'product 4',
      'product 5',
      'product 6',
      'product 7',
    ]);
    expectNoDoubleChargeAndVerifiedOutputs(t.sim, ws);
  });

  it('a tag budget reached under --only tag:NAME stops the run (exit 3) instead of asking for the same item forever', {
    timeout: 40_000,
  }, async () => {
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(
      t.sim,
      `version: 1
defaults: { model: studio-lite }
budget: { perTag: { brand-a: 4 } }
items:
  - rows: rows.csv
    id: "sku-{{sku}}"
    prompt: "product {{sku}}"
    tags: ["{{brand}}"]
`,
      { 'rows.csv': 'sku,brand\n1,brand-a\n2,brand-b\n3,brand-a\n4,brand-a\n' },
    );
    const run = ws.start(['--only', 'tag:brand-a']);
    expect(await exitCodeWithin(run, 30_000), run.output()).toBe(3);
    expect(run.output()).toMatch(/the budget of tag brand-a \(4 credits\) is reached/);
    expect(chargedPrompts(t)).toEqual(['product 1', 'product 3']);
  });
});
