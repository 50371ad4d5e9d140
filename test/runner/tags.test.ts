import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCliInProcess } from '../helpers/cli.js';
import { expectNoDoubleChargeAndVerifiedOutputs, workspace } from '../helpers/run.js';
import { startTestSim } from '../helpers/sim.js';

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
    expect(
      t.sim.service.ledger
        .of('charge')
        .map((c) => c.prompt)
        .sort(),
    ).toEqual(['product 1', 'product 3']);
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
});
