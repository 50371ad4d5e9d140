import mime from 'mime-types';
import { describe, expect, it } from 'vitest';
import { COMMON_EXTENSIONS, extensionFor } from '../../src/download/download.js';

describe("an output's extension, from its Content-Type", () => {
  it('names the common media types as mime-types does', () => {
    for (const [type, ext] of Object.entries(COMMON_EXTENSIONS)) expect(mime.extension(type), type).toBe(ext);
  });

  it("reads the type whatever its case and parameters, asks mime-types for any other, and falls back to the item type's own", async () => {
    expect(await extensionFor('IMAGE/JPEG; charset=binary', 'image')).toBe('jpg');
    expect(await extensionFor('video/quicktime', 'video')).toBe('qt');
    expect(await extensionFor('image/svg+xml', 'image')).toBe('svg');
    expect(await extensionFor('application/x-unknown-thing', 'image')).toBe('png');
    expect(await extensionFor(undefined, 'video')).toBe('mp4');
    expect(await extensionFor('', 'image')).toBe('png');
  });
});
