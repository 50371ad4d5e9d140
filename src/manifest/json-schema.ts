import * as z from 'zod';
import { manifestSchema } from './schema.js';

/** The manifest's JSON Schema, generated from the zod schema so the two cannot drift. */
export function manifestJsonSchema(): Record<string, unknown> {
  const schema = z.toJSONSchema(manifestSchema, { target: 'draft-2020-12', io: 'input' }) as Record<string, unknown>;
  return {
    $schema: schema.$schema,
    title: 'genbatch manifest',
    description:
      'A batch of image and video generations for genbatch. Generated from src/manifest/schema.ts by `npm run schema`; do not edit.',
    ...Object.fromEntries(Object.entries(schema).filter(([k]) => k !== '$schema')),
  };
}

export function manifestJsonSchemaText(): string {
  return `${JSON.stringify(manifestJsonSchema(), null, 2)}\n`;
}
