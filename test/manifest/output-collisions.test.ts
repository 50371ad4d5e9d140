import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { formatIssue, loadManifest } from '../../src/manifest/index.js';

// With the default output name, duplicate ids and shared output files are found through one map keyed by
// the id as the file name puts it (made safe, lower case). These hold it to the general check, which renders
// every item's file name: the same name, written `{{ id }}` instead of `{{id}}`, takes the general way.

const dir = mkdtempSync(join(tmpdir(), 'genbatch-collisions-'));
let runNo = 0;

/** The rows lines each way of checking flags, for a rows file of these ids (images of one model). */
async function flaggedRows(ids: string[]): Promise<{ folded: number[]; general: number[]; messages: string[] }> {
  const run = runNo++;
  writeFileSync(join(dir, `rows-${run}.csv`), `sku\n${ids.join('\n')}\n`);
  const manifest = (name: string) =>
    `version: 1\ndefaults: { model: studio-lite }\noutput: { name: "${name}" }\nitems:\n  - rows: rows-${run}.csv\n    id: "{{sku}}"\n    prompt: "product {{sku}}"\n`;
  writeFileSync(join(dir, `folded-${run}.yaml`), manifest('{{id}}-{{n}}.{{ext}}'));
  writeFileSync(join(dir, `general-${run}.yaml`), manifest('{{ id }}-{{n}}.{{ext}}'));
  const lines = async (file: string) => {
    const { issues } = await loadManifest(file, dir);
    return {
      lines: [...new Set(issues.issues.map((i) => i.row?.line ?? 0))].sort((a, b) => a - b),
      messages: issues.issues.map(formatIssue),
    };
  };
  const folded = await lines(`folded-${run}.yaml`);
  const general = await lines(`general-${run}.yaml`);
  return { folded: folded.lines, general: general.lines, messages: folded.messages };
}

describe('duplicate ids and shared output files under the default output name', () => {
  it('flag the same rows as the general check, for ids that differ only in case or in what a file name cannot hold', async () => {
    const id = fc.string({
      unit: fc.constantFrom('a', 'A', 'b', 'É', 'é', '/', '\\', '_', '.', '-'),
      minLength: 1,
      maxLength: 3,
    });
    await fc.assert(
      fc.asyncProperty(fc.array(id, { minLength: 1, maxLength: 10 }), async (ids) => {
        const { folded, general } = await flaggedRows(ids);
        expect(folded).toEqual(general);
      }),
      { numRuns: 150 },
    );
  });

  it('names both items and the file they would share, and the first of a duplicate id', async () => {
    const { folded, messages } = await flaggedRows(['Mug', 'a/b', 'mug', 'a_b', 'x', 'x']);
    expect(folded).toEqual([4, 5, 7]);
    expect(messages.map((m) => m.replace(/^.*?: items\[0\]\.id: /, ''))).toEqual([
      `items "Mug" and "mug" would write the same file mug-1.png (row at rows-${runNo - 1}.csv:4)`,
      `items "a/b" and "a_b" would write the same file a_b-1.png (row at rows-${runNo - 1}.csv:5)`,
      'duplicate id "x": ids must be unique after expansion (first at rows-' +
        (runNo - 1) +
        '.csv:6) (row at rows-' +
        (runNo - 1) +
        '.csv:7)',
    ]);
  });

  it('lets an image and a video share an id folded alike: their files differ by extension', async () => {
    writeFileSync(
      join(dir, 'types.yaml'),
      'version: 1\nitems:\n  - { id: Clip, model: studio-lite, prompt: a still }\n  - { id: clip, type: video, model: motion-2, prompt: a spin, image: { from: Clip } }\n  - { id: CLIP, model: studio-lite, prompt: another still }\n',
    );
    const { issues } = await loadManifest('types.yaml', dir);
    expect(issues.issues.map(formatIssue)).toEqual([
      expect.stringContaining('items[2].id: items "Clip" and "CLIP" would write the same file CLIP-1.png'),
    ]);
  });
});
