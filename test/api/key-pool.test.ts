import { describe, expect, it } from 'vitest';
import { keyFingerprint, keysFromEnv, parseKeyPool } from '../../src/api/key-pool.js';

const k = (n: number) => `gbk_${'s3cr3t'.repeat(4)}${n}`;

describe('the key pool from the environment', () => {
  it('takes keys separated by commas or newlines, each with a fingerprint that does not reveal it', () => {
    const pool = parseKeyPool(`${k(1)}, ${k(2)}\n${k(3)}\r\n\n`);
    expect(pool.map((p) => p.key)).toEqual([k(1), k(2), k(3)]);
    expect(pool.map((p) => p.fingerprint)).toEqual([k(1), k(2), k(3)].map(keyFingerprint));
    for (const p of pool) {
      expect(p.fingerprint).toMatch(/^[0-9a-f]{12}$/);
      expect(p.key).not.toContain(p.fingerprint);
    }
    expect(keysFromEnv({ GENBATCH_API_KEY: k(9) })).toEqual([{ key: k(9), fingerprint: keyFingerprint(k(9)) }]);
    expect(keysFromEnv({})).toBeUndefined();
  });

  it('refuses more than 5 keys, a key listed twice, a malformed one, and both variables at once, never showing a key', () => {
    const cases: [NodeJS.ProcessEnv, RegExp][] = [
      [{ GENBATCH_API_KEYS: [1, 2, 3, 4, 5, 6].map(k).join(',') }, /holds 6 keys; an account has at most 5/],
      [{ GENBATCH_API_KEYS: `${k(1)},${k(2)},${k(1)}` }, /key 3 is the same as key 1/],
      [{ GENBATCH_API_KEYS: `${k(1)},"${k(2)}"` }, /key 2 of 2 in GENBATCH_API_KEYS is not an API key/],
      [{ GENBATCH_API_KEYS: `${k(1)},nounderscore${k(2).slice(4)}` }, /key 2 of 2/],
      [{ GENBATCH_API_KEYS: k(1), GENBATCH_API_KEY: k(2) }, /Both GENBATCH_API_KEY and GENBATCH_API_KEYS are set/],
    ];
    for (const [env, message] of cases) {
      let error: Error | undefined;
      try {
        keysFromEnv(env);
      } catch (e) {
        error = e as Error;
      }
      expect(error?.message).toMatch(message);
      for (const n of [1, 2, 3, 4, 5, 6]) expect(error!.message).not.toContain(k(n).slice(4));
    }
  });
});
