import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { formatIssue, loadManifest, type LoadedManifest } from '../../src/manifest/index.js';
import { makePng } from '../../src/simulator/media.js';

function workspace(files: Record<string, string | Buffer>): string {
  const dir = mkdtempSync(join(tmpdir(), 'genbatch-manifest-'));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

async function load(files: Record<string, string | Buffer>, file = 'm.yaml'): Promise<LoadedManifest> {
  const dir = workspace(files);
  const { loaded, issues } = await loadManifest(file, dir);
  expect(issues.issues.map(formatIssue)).toEqual([]);
  return loaded!;
}

describe('expansion', () => {
  it('merges defaults, expands matrices in key order, rows × matrix, and repeat', async () => {
    const m = await load({
      'm.yaml': `version: 1
defaults: { model: studio-xl, aspectRatio: "4:5" }
vars: { brand: Acme }
items:
  - id: "mug-{{color}}-{{size}}"
    prompt: "A {{size}} {{color}} mug by {{brand}}"
    matrix: { color: [red, blue], size: [s, l] }
  - rows: p.csv
    id: "sku-{{sku}}-{{scene}}"
    prompt: "{{title}}, {{scene}}"
    aspectRatio: "1:1"
    matrix: { scene: [studio, kitchen] }
  - id: hero
    prompt: "Hero shot {{id}} on {{model}}"
    repeat: 3
`,
      'p.csv': 'sku,title\n7,"Mug, large"\n8,Bowl\n',
    });
    expect(m.items.map((i) => i.id)).toEqual([
      'mug-red-s',
      'mug-red-l',
      'mug-blue-s',
      'mug-blue-l',
      'sku-7-studio',
      'sku-7-kitchen',
      'sku-8-studio',
      'sku-8-kitchen',
      'hero#1',
      'hero#2',
      'hero#3',
    ]);
    expect(m.items[0]).toMatchObject({
      prompt: 'A s red mug by Acme',
      model: 'studio-xl',
      aspectRatio: '4:5',
      type: 'image',
    });
    expect(m.items[4]).toMatchObject({
      prompt: 'Mug, large, studio',
      aspectRatio: '1:1',
      where: { row: { file: 'p.csv', line: 2 } },
    });
    expect(m.items[8]!.prompt).toBe('Hero shot hero on studio-xl');
    expect(m.name).toBe('m');
  });

  it('reads JSONL rows and a JSON manifest', async () => {
    const m = await load(
      {
        'm.json': JSON.stringify(
          {
            version: 1,
            name: 'j',
            items: [{ rows: 'r.jsonl', id: 'r-{{n_}}', model: 'studio-lite', prompt: '{{t}} ({{flag}})' }],
          },
          null,
          '\t',
        ),
        'r.jsonl': '{"n_": 1, "t": "one", "flag": true}\n\n{"n_": 2, "t": "two", "flag": false}\n',
      },
      'm.json',
    );
    expect(m.items.map((i) => [i.id, i.prompt])).toEqual([
      ['r-1', 'one (true)'],
      ['r-2', 'two (false)'],
    ]);
  });

  it('resolves file inputs against the manifest, keeps {from} references, and types videos', async () => {
    const m = await load({
      'm.yaml': `version: 1
items:
  - { id: hero, model: studio-xl, prompt: p }
  - { id: edit, model: studio-edit, prompt: p, inputs: [in.png, { from: hero }] }
  - { id: spin, type: video, model: motion-2, prompt: p, duration: 5, image: { from: hero } }
  - { id: more, type: video, model: motion-extend, prompt: p, duration: "10", source: spin }
`,
      'in.png': makePng('input'),
    });
    const [, edit, spin, more] = m.items;
    expect(edit!.inputs).toEqual([
      { kind: 'file', path: expect.stringMatching(/in\.png$/), display: 'in.png' },
      { kind: 'item', id: 'hero' },
    ]);
    expect(spin).toMatchObject({ type: 'video', duration: '5', image: { kind: 'item', id: 'hero' } });
    expect(more).toMatchObject({ duration: '10', source: 'spin' });
  });

  it('puts outputs in output.dir relative to the manifest, else out/<name> beside it', async () => {
    const a = await load({ 'm.yaml': 'version: 1\nname: spring\nitems: [{ id: a, model: m, prompt: p }]\n' });
    expect(a.outputDir).toBe(join(a.source.dir, 'out', 'spring'));
    const b = await load({
      'm.yaml': 'version: 1\noutput: { dir: ../elsewhere }\nitems: [{ id: a, model: m, prompt: p }]\n',
    });
    expect(b.outputDir).toBe(join(b.source.dir, '..', 'elsewhere'));
  });

  it('reports a template error once, not once per matrix combination', async () => {
    const dir = workspace({
      'm.yaml':
        'version: 1\nitems:\n  - id: "x-{{c}}"\n    model: m\n    prompt: "{{nope}}"\n    matrix: { c: [1, 2, 3] }\n',
    });
    const { issues } = await loadManifest('m.yaml', dir);
    expect(issues.count).toBe(1);
  });

  it('says a mistake met in 1,000 rows once, with a did-you-mean, its first rows and their count', async () => {
    const rows = ['sku,title'].concat(Array.from({ length: 1000 }, (_, i) => `${i},t${i}`)).join('\n');
    const dir = workspace({
      'm.yaml': 'version: 1\nitems:\n  - rows: r.csv\n    id: "s-{{sku}}"\n    model: m\n    prompt: "{{titel}}"\n',
      'r.csv': rows,
    });
    const { issues } = await loadManifest('m.yaml', dir);
    expect(issues.issues.map(formatIssue)).toEqual([
      'm.yaml:6:5: items[0].prompt: unknown template name {{titel}}; did you mean {{title}}? known here: id, model, sku, title, type (in 1,000 rows, first r.csv:2, 3, 4, 5, 6)',
    ]);
    expect(issues.issues[0]).toMatchObject({ row: { file: 'r.csv', line: 2 }, rowCount: 1000 });
    expect(issues.count).toBe(1);
  });

  it('caps different errors of one kind so a bad 1,000-row file stays readable, but counts them all', async () => {
    const rows = Array.from({ length: 1000 }, () => 'not json').join('\n');
    const dir = workspace({
      'm.yaml': 'version: 1\nitems:\n  - rows: r.jsonl\n    id: "s-{{sku}}"\n    model: m\n    prompt: "p"\n',
      'r.jsonl': rows,
    });
    const { issues } = await loadManifest('m.yaml', dir);
    expect(issues.issues).toHaveLength(20);
    expect(issues.issues[19]!.line).toBe(20);
    expect(issues.count).toBe(1000);
  });
});

describe('values are data, templates are text', () => {
  it('sends a row, matrix or vars value that holds {{…}} as written, and still refuses a malformed template', async () => {
    const m = await load({
      'm.yaml': `version: 1
defaults: { model: studio-xl }
vars: { brand: Acme, motto: "{{not a template}}" }
items:
  - rows: feed.csv
    id: "sku-{{sku}}"
    prompt: "{{title}}, product photo for {{brand}}"
  - id: "tee-{{color}}"
    prompt: "A {{color}} tee, {{motto}}"
    matrix: { color: ["{{red}}"] }
`,
      'feed.csv': 'sku,title\n1,{{brand}} special edition\n2,"Mug }} {{ odd"\n',
    });
    expect(m.items.map((i) => i.prompt)).toEqual([
      '{{brand}} special edition, product photo for Acme',
      'Mug }} {{ odd, product photo for Acme',
      'A {{red}} tee, {{not a template}}',
    ]);
    expect(m.items.map((i) => i.id)).toEqual(['sku-1', 'sku-2', 'tee-{{red}}']);

    const dir = workspace({
      'bad.yaml':
        'version: 1\ndefaults: { model: studio-xl }\nitems:\n  - id: a\n    prompt: "A mug for {{brand-name}} }}"\n',
    });
    const { issues } = await loadManifest('bad.yaml', dir);
    expect(issues.issues.map(formatIssue)).toEqual([
      expect.stringMatching(/items\[0\]\.prompt: a malformed template in "A mug for \{\{brand-name\}\} \}\}"/),
    ]);
  });
});
