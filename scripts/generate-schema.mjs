// Writes schemas/manifest.schema.json from the zod schema (run after a build).
import { writeFile } from 'node:fs/promises';
import { manifestJsonSchemaText } from '../dist/manifest/json-schema.js';

await writeFile(new URL('../schemas/manifest.schema.json', import.meta.url), manifestJsonSchemaText());
console.log('wrote schemas/manifest.schema.json');
