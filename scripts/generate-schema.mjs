// Writes schemas/manifest.schema.json and docs/manifest.md from the zod schema, and docs/states.md from the item's
// machine (run after a build).
import { writeFile } from 'node:fs/promises';
import { manifestJsonSchemaText } from '../dist/manifest/json-schema.js';
import { manifestReferenceText } from '../dist/manifest/manifest-doc.js';
import { statesReferenceText } from '../dist/store/machine/states-doc.js';

await writeFile(new URL('../schemas/manifest.schema.json', import.meta.url), manifestJsonSchemaText());
await writeFile(new URL('../docs/manifest.md', import.meta.url), manifestReferenceText());
await writeFile(new URL('../docs/states.md', import.meta.url), statesReferenceText());
console.log('wrote schemas/manifest.schema.json, docs/manifest.md and docs/states.md');
