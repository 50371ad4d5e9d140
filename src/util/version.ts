import { createRequire } from 'node:module';

/** genbatch's own version, from its package.json (src/ and dist/ sit at the same depth). */
export const GENBATCH_VERSION = (createRequire(import.meta.url)('../../package.json') as { version: string }).version;
