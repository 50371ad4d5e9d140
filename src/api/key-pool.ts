import { createHash } from 'node:crypto';
import { GenbatchError } from '../util/errors.js';

/** The service lets an account hold this many keys. */
export const MAX_KEYS = 5;

/** An API key with the name it goes by everywhere it may be seen: a short hash, never the key. */
export interface PoolKey {
  key: string;
  fingerprint: string;
}

/**
 * A key's fingerprint: 12 hex digits of its SHA-256. Stored with each attempt
 * to bind it to its key, and shown in messages; the key cannot be recovered from it.
 */
export function keyFingerprint(key: string): string {
  return createHash('sha256').update(key).digest('hex').slice(0, 12);
}

// The spec: "a fixed short prefix followed by an underscore" (neither the prefix nor the secret's alphabet is
// shown), so only what no key can hold is refused: spaces, quotes, a missing prefix.
const KEY_SHAPE = /^[^\s"'`_]+_[^\s"'`]+$/;

export class KeyPoolError extends GenbatchError {}

const SEPARATOR = /[,\n\r]+/;

/** Every key text the environment holds, checked or not: what a log scrubs, whatever else goes wrong. */
export function keyTextsIn(env: NodeJS.ProcessEnv): string[] {
  return [env.GENBATCH_API_KEY ?? '', ...(env.GENBATCH_API_KEYS ?? '').split(SEPARATOR)]
    .map((k) => k.trim())
    .filter(Boolean);
}

/**
 * The keys of GENBATCH_API_KEYS (commas or newlines between them) or the one
 * of GENBATCH_API_KEY. Errors say which key by its place, never by its text.
 */
export function keysFromEnv(env: NodeJS.ProcessEnv): PoolKey[] | undefined {
  const pool = env.GENBATCH_API_KEYS;
  const single = env.GENBATCH_API_KEY;
  if (pool !== undefined && pool.trim() !== '') {
    if (single)
      throw new KeyPoolError(
        'Both GENBATCH_API_KEY and GENBATCH_API_KEYS are set: set one (GENBATCH_API_KEYS may hold a single key).',
      );
    return parseKeyPool(pool);
  }
  if (!single) return undefined;
  // One key is sent as it is: the service's 401 says more about it than a guess at its shape.
  return [{ key: single, fingerprint: keyFingerprint(single) }];
}

export function parseKeyPool(text: string): PoolKey[] {
  const parts = text
    .split(SEPARATOR)
    .map((k) => k.trim())
    .filter((k) => k !== '');
  if (parts.length > MAX_KEYS)
    throw new KeyPoolError(`GENBATCH_API_KEYS holds ${parts.length} keys; an account has at most ${MAX_KEYS}.`);
  const keys = parts.map((key, i) => checked(key, `key ${i + 1} of ${parts.length} in GENBATCH_API_KEYS`));
  const seen = new Map<string, number>();
  for (const [i, k] of keys.entries()) {
    const first = seen.get(k.fingerprint);
    if (first !== undefined)
      throw new KeyPoolError(`GENBATCH_API_KEYS: key ${i + 1} is the same as key ${first + 1}; list each key once.`);
    seen.set(k.fingerprint, i);
  }
  return keys;
}

function checked(key: string, where: string): PoolKey {
  if (!KEY_SHAPE.test(key)) {
    throw new KeyPoolError(
      `${where} is not an API key: one is a short prefix, an underscore and the secret, with no spaces or quotes (its text is not shown here).`,
    );
  }
  return { key, fingerprint: keyFingerprint(key) };
}
