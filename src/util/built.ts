import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

let found: string | undefined;

/**
 * Where the build's output is (dist/ of the genbatch package): found from this module's place, whether it runs
 * from dist/, from the bin's bundle (dist/bin/chunks) or from src/ under the tests.
 */
export function builtDir(): string {
  if (found) return found;
  for (let dir = dirname(fileURLToPath(import.meta.url)); ; dir = dirname(dir)) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest) && (JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string }).name === 'genbatch')
      return (found = join(dir, 'dist'));
    if (dirname(dir) === dir) throw new Error('the build of genbatch was not found: run npm run build');
  }
}
