import { createHash } from 'node:crypto';
import { mkdtempSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { fileSha256 } from '../../src/runner/core/identity.js';

describe('input hashes', () => {
  it('a file edited during a long run is hashed anew (its new bytes get uploaded), an unchanged one is not re-read', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'genbatch-inputs-'));
    const path = join(dir, 'mug.png');
    writeFileSync(path, 'first version');
    const first = await fileSha256(path);
    expect(await fileSha256(path)).toBe(first);
    writeFileSync(path, 'second, edited version');
    const later = new Date(Date.now() + 5_000);
    utimesSync(path, later, later);
    const second = await fileSha256(path);
    expect(second).not.toBe(first);
    expect(second).toBe(createHash('sha256').update('second, edited version').digest('hex'));
  });
});
