import { mkdtempSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeFolder, makeFolderSync } from '../../src/util/make-folder.js';

describe('making a folder and those above it', () => {
  it.each([
    ['async', makeFolder],
    ['sync', async (p: string) => makeFolderSync(p)],
  ])('%s: makes every missing level, leaves an existing one, and refuses a file or procfs at once', async (_, make) => {
    const root = mkdtempSync(join(tmpdir(), 'genbatch-folder-'));
    await make(join(root, 'a', 'b', 'c'));
    expect(statSync(join(root, 'a', 'b', 'c')).isDirectory()).toBe(true);
    await make(join(root, 'a', 'b'));
    writeFileSync(join(root, 'file'), 'x');
    await expect(make(join(root, 'file', 'below'))).rejects.toMatchObject({ code: 'ENOTDIR' });
    await expect(make('/proc/genbatch-never')).rejects.toMatchObject({ code: 'ENOENT' });
  });
});
