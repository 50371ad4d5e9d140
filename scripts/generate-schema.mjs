// Writes schemas/manifest.schema.json and docs/manifest.md from the zod schema (run after a build).
import { writeFile } from 'node:fs/promises';
import { manifestJsonSchemaText } from '../dist/manifest/json-schema.js';
import { manifestReferenceText } from '../dist/manifest/manifest-doc.js';

await writeFile(new URL('../schemas/manifest.schema.json', import.meta.url), manifestJsonSchemaText());
await writeFile(new URL('../docs/manifest.md', import.meta.url), manifestReferenceText());
console.log('wrote schemas/manifest.schema.json and docs/manifest.md');
