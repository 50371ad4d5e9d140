import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { cleanEnv, runCli, runCliInProcess } from '../helpers/cli.js';
import { startTestSim } from '../helpers/sim.js';
import { makePng } from '../../src/simulator/media.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const EXAMPLES = [
  'manifests/demo.yaml',
  'manifests/catalog.yaml',
  'manifests/video-pipeline.yaml',
  'manifests/draft-final.yaml',
];

describe('genbatch validate', () => {
  it.each(EXAMPLES)('%s is valid, offline and online', async (manifest) => {
    const offline = await runCli(['validate', manifest], cleanEnv(), root);
    expect(offline.code).toBe(0);
    expect(offline.stdout).toMatch(/valid: \d+ items .*\(models and values not checked: --online\)$/m);
    const online = await runCliInProcess(['validate', manifest, '--online', '--simulate'], cleanEnv(), root);
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
    const res = await runCliInProcess(
      ['validate', 'm.yaml', '--online'],
      cleanEnv({ GENBATCH_BASE_URL: t.sim.baseUrl, GENBATCH_API_KEY: t.sim.apiKey }),
      dir,
    );
    expect(res.code).toBe(2);
    const lines = res.stderr.split('\n');
    const expected = [
      'm.yaml:3:14: items[0].model: unknown image model "studio-xxl"; did you mean studio-xl? (the catalog has studio-xl, studio-lite, studio-edit)',
      'm.yaml:4:14: items[1].model: studio-edit is an edit model; it needs inputs to edit',
      'm.yaml:5:43: items[2].inputs: studio-xl generates from text; editing inputs needs a model of kind edit',
      'm.yaml:6:43: items[3].resolution: studio-xl does not take resolution "8K"; allowed: 1K, 2K, 4K',
      'm.yaml:7:60: items[4].image: motion-extend is a video-extend model; image fits image-to-video',
      'm.yaml:8:55: items[5].duration: motion-2 does not take duration "7"; allowed: 5, 10',
      "m.yaml:7:14: items[4].type: the key lacks the video scope, which the manifest's 2 video items need; create a key with it",
    ];
    for (const line of expected)
      expect(
        lines.some((l) => l.endsWith(line)),
        line,
      ).toBe(true);
    // Every line says whose it is, and the problems come in the order of the file.
    const said = lines.filter(Boolean);
    expect(said.every((l) => l.startsWith('genbatch: '))).toBe(true);
    const places = said.flatMap((l) => /^genbatch: m\.yaml:(\d+):(\d+):/.exec(l)?.slice(1).map(Number) ?? []);
    const order = Array.from({ length: places.length / 2 }, (_, i) => places[2 * i]! * 1000 + places[2 * i + 1]!);
    expect(order).toHaveLength(expected.length);
    expect(order).toEqual([...order].sort((a, b) => a - b));
    expect(t.sim.service.ledger.of('charge')).toHaveLength(0);
  });

  it('a value items take from defaults is said where it is written, once, with how many items take it', async () => {
    const t = await startTestSim();
    const dir = mkdtempSync(join(tmpdir(), 'genbatch-online-'));
    const items = Array.from({ length: 40 }, (_, i) => `  - { id: i${i}, prompt: p }`).join('\n');
    writeFileSync(
      join(dir, 'm.yaml'),
      `version: 1\ndefaults:\n  model: studio-xll\n  resolution: 2k\nitems:\n${items}\n  - { id: own, model: studio-lite, prompt: p }\n  - { id: mine, model: studio-xxl, prompt: p }\n`,
    );
    const res = await runCliInProcess(
      ['validate', 'm.yaml', '--online'],
      cleanEnv({ GENBATCH_BASE_URL: t.sim.baseUrl, GENBATCH_API_KEY: t.sim.apiKey }),
      dir,
    );
    expect(res.code).toBe(2);
    expect(res.stderr.split('\n').filter(Boolean)).toEqual([
      'genbatch: m.yaml:3:3: defaults.model: unknown image model "studio-xll"; did you mean studio-xl? (the catalog has studio-xl, studio-lite, studio-edit) (40 items take it from here)',
      'genbatch: m.yaml:4:3: defaults.resolution: studio-lite does not take resolution "2k"; allowed: 1K, 2K (1 item takes it from here)',
      'genbatch: m.yaml:47:17: items[41].model: unknown image model "studio-xxl"; did you mean studio-xl? (the catalog has studio-xl, studio-lite, studio-edit)',
      'genbatch: 3 problems found; nothing was submitted.',
    ]);
  });
});

describe('validate warnings', () => {
  it('warns, with counts and the first places, when a template value is empty in a prompt that is not', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'genbatch-warn-'));
    writeFileSync(
      join(dir, 'm.yaml'),
      'version: 1\ndefaults: { model: studio-lite }\nitems:\n  - rows: p.csv\n    id: "{{sku}}"\n    prompt: "{{title}}, studio product photo"\n',
    );
    writeFileSync(join(dir, 'p.csv'), 'sku,title\na,Red mug\nb,\nc,Blue mug\nd,\ne,  \nf,\n');
    const res = await runCliInProcess(['validate', 'm.yaml'], cleanEnv(), dir);
    expect(res.code).toBe(0);
    expect(res.stdout).toContain(
      'warning: m.yaml:6:5: items[0].prompt: {{title}} is empty in 4 items (first at p.csv:3, p.csv:5, p.csv:6): the prompt is sent without it',
    );
    const json = JSON.parse((await runCliInProcess(['validate', 'm.yaml', '--json'], cleanEnv(), dir)).stdout);
    expect(json.valid).toBe(true);
    expect(json.warnings).toHaveLength(1);
    expect(json.warnings[0]).toMatchObject({ line: 6, field: 'items[0].prompt' });
  });
});

describe('genbatch estimate', () => {
  it('prints credits per model, the total, key days and an ETA; --json has the same figures', async () => {
    const table = await runCliInProcess(['estimate', 'manifests/catalog.yaml', '--simulate'], cleanEnv(), root);
    expect(table.code).toBe(0);
    const json = await runCliInProcess(
      ['estimate', 'manifests/catalog.yaml', '--simulate', '--json'],
      cleanEnv(),
      root,
    );
    expect(json.code).toBe(0);
    const e = JSON.parse(json.stdout);
    expect(e.items).toEqual({ total: 321, image: 321, video: 0 });
    for (const m of e.models)
      expect(table.stdout).toMatch(
        new RegExp(`${m.model}\\s+image\\s+${m.items}\\s+${m.each}\\s+${m.credits.toLocaleString('en-US')}\\s+catalog`),
      );
    expect(table.stdout).toMatch(new RegExp(`total\\s+321\\s+${e.credits.total.toLocaleString('en-US')}`));
    expect(e.credits.total).toBe(303 * 8 + 18 * 2);
    expect(table.stdout).toContain(`${e.dailyCap.keyDays} key day`);
    // A rehearsal runs at 60x: its time is said as it will pass.
    expect(table.stdout).toMatch(/time:\s+about \d+ s, limited by the submission rate/);
    expect(e.duration.seconds).toBe(Math.round((321 * 6 + 50) / 60));
    expect(e.budget).toMatchObject({ maxCredits: 15000, within: true });
  });

  it("says one number of key days, the plan's, and names the items no day can take", async () => {
    const est = (cap: string) =>
      runCliInProcess(['estimate', 'manifests/demo.yaml', '--simulate', '--daily-cap', cap], cleanEnv(), root);
    const json = await runCliInProcess(
      ['estimate', 'manifests/demo.yaml', '--simulate', '--daily-cap', '20', '--json'],
      cleanEnv(),
      root,
    );
    const e = JSON.parse(json.stdout);
    // 58 credits in jobs of 8 and 2: 20 a day takes 18, 16, 16 and 8, four days where 58/20 would say three.
    expect([e.dailyCap.keyDays, e.plan.endsOnDay]).toEqual([4, 4]);
    const text = (await est('20')).stdout;
    expect(text).toContain('20 credits per key day: 4 key days');
    expect(text).toContain('the last item is sent on key day 4');
    const over = await est('5');
    expect(over.code).toBe(3);
    expect(over.stdout).toMatch(
      /7 items cannot be placed \(no price, or over every cap\): hero-mug, mug-red-studio, mug-red-kitchen, mug-blue-studio, mug-blue-kitchen, …/,
    );
    expect(over.stdout).toContain('1 key day for the items that can be placed');
  });

  it('obeys the limit flags, and submits nothing', async () => {
    const t = await startTestSim();
    const env = cleanEnv({ GENBATCH_BASE_URL: t.sim.baseUrl, GENBATCH_API_KEY: t.sim.apiKey });
    const res = await runCliInProcess(
      [
        'estimate',
        'manifests/catalog.yaml',
        '--json',
        '--daily-cap',
        '1000',
        '--submit-rate',
        '5/1m',
        '--max-credits',
        '100',
      ],
      env,
      root,
    );
    // A budget of 100 for 2,460 credits makes the run impossible as planned: exit 3, with the figures all the same.
    expect(res.code).toBe(3);
    const e = JSON.parse(res.stdout);
    expect(e.simulated).toBe(false);
    expect(e.blockers.map((b: { reason: string }) => b.reason)).toEqual(['budget']);
    expect(e.dailyCap).toEqual({ credits: 1000, largestKey: 1000, keys: 1, keyDays: 3 });
    expect(e.budget).toEqual({ maxCredits: 100, within: false, itemsWithin: 12 });
    expect(e.limits.submitRate).toBe('5/60s');
    expect(t.sim.service.ledger.of('charge')).toHaveLength(0);
    expect(t.sim.service.ledger.of('request').map((r) => r.path)).toEqual(['/me', '/models']);
  });

  it("labels a rehearsal's figures as simulated", async () => {
    const table = await runCliInProcess(['estimate', 'manifests/demo.yaml', '--simulate'], cleanEnv(), root);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(
      /^simulated: the balance, daily cap and catalog below are the simulator's, not your key's$/m,
    );
    const json = JSON.parse(
      (await runCliInProcess(['estimate', 'manifests/demo.yaml', '--simulate', '--json'], cleanEnv(), root)).stdout,
    );
    expect(json.simulated).toBe(true);
  });

  it('exits 3 and says why when the balance or the daily cap make the run impossible', async () => {
    const t = await startTestSim({ credits: 10 });
    const env = cleanEnv({ GENBATCH_BASE_URL: t.sim.baseUrl, GENBATCH_API_KEY: t.sim.apiKey });
    const short = await runCliInProcess(['estimate', 'manifests/demo.yaml'], env, root);
    expect(short.code).toBe(3);
    expect(short.stdout).toMatch(/cannot run as planned \(balance\): the balance \(10 credits\) is short by 48/);
    const rich = await startTestSim();
    const richEnv = cleanEnv({ GENBATCH_BASE_URL: rich.sim.baseUrl, GENBATCH_API_KEY: rich.sim.apiKey });
    const capped = await runCliInProcess(['estimate', 'manifests/demo.yaml', '--daily-cap', '5'], richEnv, root);
    expect(capped.code).toBe(3);
    expect(capped.stdout).toMatch(/cannot run as planned \(daily-cap\): a job of 8 credits is over the daily cap of 5/);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(0);
  });

  it('on a manifest that has run, says what remains to spend beside the total', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const env = cleanEnv({ GENBATCH_BASE_URL: t.sim.baseUrl, GENBATCH_API_KEY: t.sim.apiKey });
    const dir = mkdtempSync(join(tmpdir(), 'genbatch-estimate-'));
    const items = Array.from({ length: 6 }, (_, i) => `  - { id: mug-${i}, prompt: "mug ${i}" }`).join('\n');
    writeFileSync(join(dir, 'm.yaml'), `version: 1\ndefaults: { model: studio-lite }\nitems:\n${items}\n`);
    // studio-lite costs 2: a budget of 4 lets 2 items through, then the run stops (exit 3).
    const run = await runCliInProcess(['run', 'm.yaml', '--time-scale', '600', '--max-credits', '4'], env, dir);
    expect(run.code, run.stdout + run.stderr).toBe(3);
    const charged = t.sim.service.ledger.of('charge').length;
    const e = JSON.parse((await runCliInProcess(['estimate', 'm.yaml', '--json'], env, dir)).stdout);
    expect(e.credits.total).toBe(12);
    expect(e.remaining.items.total).toBe(6 - charged);
    expect(e.remaining.credits.total).toBe(2 * (6 - charged));
    expect(e.remaining.alreadyCharged).toBe(2 * charged);
    const table = await runCliInProcess(['estimate', 'm.yaml'], env, dir);
    expect(table.code).toBe(0);
    expect(table.stdout).toContain(`remaining: ${6 - charged} of 6 items not sent yet, ${2 * (6 - charged)} credits`);
    // The manifest's own budget of 4 is spent: with it the rest cannot run.
    const budget = await runCliInProcess(['estimate', 'm.yaml', '--max-credits', '4'], env, dir);
    expect(budget.code).toBe(3);
    expect(budget.stdout).toContain(
      `cannot run as planned (budget): the budget of 4 credits is short by 8 (${2 * charged} already charged net)`,
    );
  });

  it('a model the catalog does not know, or a value it does not take, is a located error (exit 2), never priced at 0', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'genbatch-estimate-'));
    writeFileSync(
      join(dir, 'm.yaml'),
      'version: 1\nitems:\n  - { id: a, model: studio-xll, prompt: p }\n  - { id: b, model: studio-xl, prompt: p, resolution: 8K }\n',
    );
    for (const json of [[], ['--json']]) {
      const res = await runCliInProcess(['estimate', 'm.yaml', '--simulate', ...json], cleanEnv(), dir);
      expect(res.code).toBe(2);
      expect(res.stdout).toBe('');
      expect(res.stderr).toContain(
        'm.yaml:3:14: items[0].model: unknown image model "studio-xll"; did you mean studio-xl? (the catalog has',
      );
      expect(res.stderr).toContain('m.yaml:4:43: items[1].resolution: studio-xl does not take resolution "8K"');
    }
  });

  it('after a rehearsal, estimate --simulate prices a fresh one (a rehearsal starts over); after a whole real run, nothing remains', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const env = cleanEnv({ GENBATCH_BASE_URL: t.sim.baseUrl, GENBATCH_API_KEY: t.sim.apiKey });
    const dir = mkdtempSync(join(tmpdir(), 'genbatch-estimate-'));
    const items = Array.from({ length: 5 }, (_, i) => `  - { id: mug-${i}, prompt: "mug ${i}" }`).join('\n');
    writeFileSync(join(dir, 'm.yaml'), `version: 1\ndefaults: { model: studio-lite }\nitems:\n${items}\n`);
    const fresh = await runCliInProcess(['estimate', 'm.yaml', '--simulate'], cleanEnv(), dir);
    expect((await runCliInProcess(['run', 'm.yaml', '--simulate'], cleanEnv(), dir)).code).toBe(0);
    const after = await runCliInProcess(['estimate', 'm.yaml', '--simulate'], cleanEnv(), dir);
    expect(after.stdout).not.toContain('remaining:');
    expect(after.stdout.match(/^time: .*$/m)?.[0]).toBe(fresh.stdout.match(/^time: .*$/m)?.[0]);
    expect((await runCliInProcess(['run', 'm.yaml', '--time-scale', '600'], env, dir)).code).toBe(0);
    const done = await runCliInProcess(['estimate', 'm.yaml'], env, dir);
    expect(done.stdout).toContain('remaining: nothing: all 5 items were sent (10 credits charged net)');
    expect(done.stdout).toMatch(/^time: {6}about 0 s for the rest/m);
    expect(done.stdout).not.toContain('plan:');
  });

  it('takes every flag of run: --only prices the chosen items and what they wait for; the others change nothing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'genbatch-estimate-'));
    writeFileSync(
      join(dir, 'm.yaml'),
      [
        'version: 1',
        'defaults: { model: studio-lite }',
        'items:',
        '  - { id: base, prompt: p }',
        '  - { id: edit-1, model: studio-edit, prompt: p, inputs: [{ from: base }] }',
        '  - { id: other, prompt: p, tags: [rush] }',
        '',
      ].join('\n'),
    );
    const estimateOf = async (args: string[]) => {
      const res = await runCliInProcess(['estimate', 'm.yaml', '--simulate', '--json', ...args], cleanEnv(), dir);
      expect(res.code, res.stderr).toBe(0);
      return JSON.parse(res.stdout);
    };
    expect((await estimateOf([])).items.total).toBe(3);
    expect((await estimateOf(['--only', 'edit-*'])).items.total).toBe(2);
    expect((await estimateOf(['--only', 'tag:rush'])).items.total).toBe(1);
    // A run's own command line, priced as it is: what cannot change the spend is taken and changes nothing.
    const same = await estimateOf([
      '--out',
      'elsewhere',
      '--max-retries',
      '5',
      '--redo-changed',
      '--idle-timeout',
      '9',
    ]);
    expect(same.credits).toEqual((await estimateOf([])).credits);
  });

  it('an invalid manifest is exit 2 before any request', async () => {
    const res = await runCliInProcess(
      ['estimate', 'test/fixtures/bad/12-duplicate-ids-after-matrix.yaml', '--simulate'],
      cleanEnv(),
      root,
    );
    expect(res.code).toBe(2);
    expect(res.stderr).toContain('duplicate id "mug"');
  });
});
