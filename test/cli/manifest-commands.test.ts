import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { cleanEnv, runCli } from '../helpers/cli.js';
import { startTestSim } from '../helpers/sim.js';
import { makePng } from '../../src/simulator/media.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const EXAMPLES = ['manifests/demo.yaml', 'manifests/catalog.yaml', 'manifests/video-pipeline.yaml'];

describe('genbatch validate', () => {
  it.each(EXAMPLES)('%s is valid, offline and online', async (manifest) => {
    const offline = await runCli(['validate', manifest], cleanEnv(), root);
    expect(offline.code).toBe(0);
    expect(offline.stdout).toMatch(/valid: \d+ items/);
    const online = await runCli(['validate', manifest, '--online', '--simulate'], cleanEnv(), root);
    expect(online.code).toBe(0);
    expect(online.stdout).toContain('online:');
  });

  it('--online checks models, kinds, modes, allowed values and scopes against the service', async () => {
    const t = await startTestSim({ keys: [{ label: 'main', scopes: ['image'] }] });
    const dir = mkdtempSync(join(tmpdir(), 'genbatch-online-'));
    writeFileSync(join(dir, 'in.png'), makePng('in'));
    writeFileSync(
      join(dir, 'm.yaml'),
      `version: 1
items:
  - { id: a, model: studio-xxl, prompt: p }
  - { id: b, model: studio-edit, prompt: p }
  - { id: c, model: studio-xl, prompt: p, inputs: [in.png] }
  - { id: d, model: studio-xl, prompt: p, resolution: 8K }
  - { id: e, type: video, model: motion-extend, prompt: p, image: in.png }
  - { id: f, type: video, model: motion-2, prompt: p, duration: 7, image: in.png }
`,
    );
    const res = await runCli(['validate', 'm.yaml', '--online'], cleanEnv({ GENBATCH_BASE_URL: t.sim.baseUrl, GENBATCH_API_KEY: t.sim.apiKey }), dir);
    expect(res.code).toBe(2);
    const lines = res.stderr.split('\n');
    const expected = [
      'm.yaml:3:14: items[0].model: unknown image model "studio-xxl"; the catalog has studio-xl, studio-lite, studio-edit',
      'm.yaml:4:14: items[1].model: studio-edit is an edit model; it needs inputs to edit',
      'm.yaml:5:43: items[2].inputs: studio-xl generates from text; editing inputs needs a model of kind edit',
      'm.yaml:6:43: items[3].resolution: studio-xl does not take resolution "8K"; allowed: 1K, 2K, 4K',
      'm.yaml:7:60: items[4].image: motion-extend is a video-extend model; image fits image-to-video',
      'm.yaml:8:55: items[5].duration: motion-2 does not take duration "7"; allowed: 5, 10',
      "m.yaml:7:14: items[4].type: the key lacks the video scope, which the manifest's 2 video item(s) need; create a key with it",
    ];
    for (const line of expected) expect(lines.some((l) => l.endsWith(line)), line).toBe(true);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(0);
  });
});

describe('genbatch estimate', () => {
  it('prints credits per model, the total, key days and an ETA; --json has the same figures', async () => {
    const table = await runCli(['estimate', 'manifests/catalog.yaml', '--simulate'], cleanEnv(), root);
    expect(table.code).toBe(0);
    const json = await runCli(['estimate', 'manifests/catalog.yaml', '--simulate', '--json'], cleanEnv(), root);
    expect(json.code).toBe(0);
    const e = JSON.parse(json.stdout);
    expect(e.items).toEqual({ total: 321, image: 321, video: 0 });
    for (const m of e.models) expect(table.stdout).toMatch(new RegExp(`${m.model}\\s+image\\s+${m.items}\\s+${m.each}\\s+${m.credits.toLocaleString('en-US')}\\s+catalog`));
    expect(table.stdout).toMatch(new RegExp(`total\\s+321\\s+${e.credits.total.toLocaleString('en-US')}`));
    expect(e.credits.total).toBe(303 * 8 + 18 * 2);
    expect(table.stdout).toContain(`${e.dailyCap.keyDays} key day`);
    expect(table.stdout).toMatch(/time:\s+about \d+ min, limited by the submission rate/);
    expect(e.duration.seconds).toBe(321 * 6 + 50);
    expect(e.budget).toMatchObject({ maxCredits: 15000, within: true });
  });

  it('obeys the limit flags, and submits nothing', async () => {
    const t = await startTestSim();
    const env = cleanEnv({ GENBATCH_BASE_URL: t.sim.baseUrl, GENBATCH_API_KEY: t.sim.apiKey });
    const res = await runCli(['estimate', 'manifests/catalog.yaml', '--json', '--daily-cap', '1000', '--submit-rate', '5/1m', '--max-credits', '100'], env, root);
    expect(res.code).toBe(0);
    const e = JSON.parse(res.stdout);
    expect(e.dailyCap).toEqual({ credits: 1000, keyDays: 3 });
    expect(e.budget).toEqual({ maxCredits: 100, within: false, itemsWithin: 12 });
    expect(e.limits.submitRate).toBe('5/60s');
    expect(t.sim.service.ledger.of('charge')).toHaveLength(0);
    expect(t.sim.service.ledger.of('request').map((r) => r.path)).toEqual(['/me', '/models']);
  });

  it('an invalid manifest is exit 2 before any request', async () => {
    const res = await runCli(['estimate', 'test/fixtures/bad/12-duplicate-ids-after-matrix.yaml', '--simulate'], cleanEnv(), root);
    expect(res.code).toBe(2);
    expect(res.stderr).toContain('duplicate id "mug"');
  });
});
