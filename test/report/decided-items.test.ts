import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCliInProcess } from '../helpers/cli.js';
import { workspace } from '../helpers/run.js';
import { startTestSim } from '../helpers/sim.js';
import { DRAFT_FINAL } from '../helpers/manifests.js';

describe('what a decision skipped, and what waits for one, as the results tell it', () => {
  it('a gate-skipped item is never a failure nor advised a retry; the gallery shows waiting and skipped items with why', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(t.sim, DRAFT_FINAL, { 'products.csv': 'sku,title\nA,Red mug\nB,Blue mug\n' });
    const cli = (...args: string[]) => runCliInProcess(args, ws.env, ws.dir);
    expect((await runCliInProcess(ws.args(), ws.env, ws.dir)).code).toBe(1);
    expect((await cli('reject', 'm.yaml', 'draft-B')).code).toBe(0);

    const run = await runCliInProcess(ws.args(), ws.env, ws.dir);
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/done 2\/4, skipped by a decision 1, waiting for a decision 1/);
    expect(run.stdout).not.toMatch(/failed|genbatch retry|failures by code/);

    const status = JSON.parse((await cli('status', 'm.yaml', '--json')).stdout);
    expect(status.failures).toEqual({});
    expect(status.problems).toEqual([]);
    expect(status.skippedByDecision).toEqual([
      { id: 'final-B', reason: 'its gate draft-B was rejected in review: it is not sent' },
    ]);
    const text = (await cli('status', 'm.yaml')).stdout;
    expect(text).toMatch(
      /skipped by a decision, never paid \(approve its gate to send it\): 1 item\n {2}final-B: its gate draft-B/,
    );
    expect(text).not.toMatch(/^failure/m);
    // retry puts back nothing a decision skipped.
    expect((await cli('retry', 'm.yaml')).stdout).not.toMatch(/final-B/);

    // The gallery: a chip for each of the two states, checked (shown), each card with why; the summary counts what
    // waits and what it would spend.
    expect((await cli('report', 'm.yaml', '--html')).code).toBe(0);
    const html = readFileSync(join(ws.outDir, 'index.html'), 'utf8');
    expect(html).toMatch(
      /<input type="checkbox" name="state" value="waiting" checked> waiting <span class="n">1<\/span>/,
    );
    expect(html).toMatch(
      /<input type="checkbox" name="state" value="skipped" checked> skipped <span class="n">1<\/span>/,
    );
    expect(html).toContain('"id":"final-A","state":"waiting"');
    expect(html).toContain('"reason":"waits for a decision on its gate draft-A"');
    expect(html).toContain('"reason":"its gate draft-B was rejected in review: it is not sent"');
    expect(html).toMatch(/<b>1<\/b> waits for a decision: 8 credits once approved, nothing paid yet/);
  }, 60_000);
});
