import { readFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { manifestJsonSchemaText } from '../../src/manifest/json-schema.js';

const committed = readFileSync(new URL('../../schemas/manifest.schema.json', import.meta.url), 'utf8');

describe('schemas/manifest.schema.json', () => {
  it('is what the zod schema generates (run `npm run schema` after changing it)', () => {
    expect(committed).toBe(manifestJsonSchemaText());
  });

  it('accepts every example manifest and names the schema in its first line', () => {
    const validate = new Ajv2020({ strict: false }).compile(JSON.parse(committed));
    for (const name of ['demo', 'catalog', 'video-pipeline']) {
      const text = readFileSync(new URL(`../../manifests/${name}.yaml`, import.meta.url), 'utf8');
      expect(text.split('\n')[0]).toBe('# yaml-language-server: $schema=../schemas/manifest.schema.json');
      expect(validate(parse(text)), `${name}: ${JSON.stringify(validate.errors)}`).toBe(true);
    }
  });

  it('rejects a misspelt field, as the loader does', () => {
    const validate = new Ajv2020({ strict: false }).compile(JSON.parse(committed));
    expect(validate({ version: 1, items: [{ id: 'a', promt: 'x' }] })).toBe(false);
  });
});

describe('docs/manifest.md', () => {
  it('is what the zod schema generates, every field with its type, what it is and an example', async () => {
    const { manifestReferenceText, fieldsWithoutExample } = await import('../../src/manifest/manifest-doc.js');
    const page = readFileSync(new URL('../../docs/manifest.md', import.meta.url), 'utf8');
    expect(page).toBe(manifestReferenceText());
    expect(fieldsWithoutExample()).toEqual([]);
    for (const field of ['`id`', '`output.dir`', '`items[].rows`', '`items[].inputs[].from`', '`derivatives[].format`'])
      expect(page).toContain(`| ${field} |`);
  });
});
