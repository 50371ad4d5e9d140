import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULT_OUTPUT_NAME, webCopyPath, outputRelativePath, resolveInside } from '../../src/manifest/index.js';

const values = (id: string, n = 1) => ({
  id,
  n,
  ext: 'png',
  model: 'studio-xl',
  type: 'image',
  vars: new Map<string, string>(),
});

describe('output file names never leave the output dir', () => {
  it.each([
    ['../x', '.._x-1.png'],
    ['..', '__-1.png'],
    ['/etc/passwd', '_etc_passwd-1.png'],
    ['a\\..\\..\\b', 'a_.._.._b-1.png'],
    ['nul\u0000byte', 'nul_byte-1.png'],
    ['ＡＢ／．．', 'ＡＢ／．．-1.png'], // full-width look-alikes are ordinary characters, not separators
  ])('id %j becomes %j', (id, expected) => {
    const out = outputRelativePath(DEFAULT_OUTPUT_NAME, values(id));
    expect(out).toEqual({ ok: true, path: expected });
    if (out.ok) expect(resolveInside('/tmp/out', out.path).startsWith('/tmp/out/')).toBe(true);
  });

  it('a template that puts {{id}} in a folder still cannot climb with id ".."', () => {
    const out = outputRelativePath('{{id}}/{{n}}.{{ext}}', values('..'));
    expect(out).toEqual({ ok: true, path: '__/1.png' });
  });

  it('refuses names longer than a file system allows', () => {
    const out = outputRelativePath(DEFAULT_OUTPUT_NAME, values('é'.repeat(200)));
    expect(out.ok).toBe(false);
  });

  it('numbers extra outputs when the template has no {{n}}', () => {
    expect(outputRelativePath('{{id}}.{{ext}}', values('a', 1))).toEqual({ ok: true, path: 'a.png' });
    expect(outputRelativePath('{{id}}.{{ext}}', values('a', 2))).toEqual({ ok: true, path: 'a-2.png' });
  });

  it("names a regenerated item's outputs by version, never its earlier outputs' names", () => {
    const v = (template: string, n: number, version: number) =>
      outputRelativePath(template, { ...values('a', n), version });
    expect(v(DEFAULT_OUTPUT_NAME, 1, 1)).toEqual({ ok: true, path: 'a-1.png' });
    expect(v(DEFAULT_OUTPUT_NAME, 1, 2)).toEqual({ ok: true, path: 'a-1.v2.png' });
    expect(v('{{id}}.{{ext}}', 2, 3)).toEqual({ ok: true, path: 'a-2.v3.png' });
    expect(v('shots/{{id}}', 1, 2)).toEqual({ ok: true, path: 'shots/a.v2' });
  });

  it('resolveInside refuses a path outside the dir, whatever made it', () => {
    expect(() => resolveInside('/tmp/out', '../x')).toThrow(/outside the output dir/);
    expect(() => resolveInside('/tmp/out', '/etc/passwd')).toThrow();
    expect(resolveInside('/tmp/out', 'a/b.png')).toBe(join(resolve('/tmp/out'), 'a', 'b.png'));
  });
});

describe('a web copy is named beside its output', () => {
  it('by its size and format, after the version, in the same folder', () => {
    expect(webCopyPath('hero-1.png', { format: 'webp', width: 1600 })).toBe('hero-1.1600w.webp');
    expect(webCopyPath('hero-1.v2.png', { format: 'webp', width: 1600 })).toBe('hero-1.v2.1600w.webp');
    expect(webCopyPath('mugs/red/hero-1.png', { format: 'jpeg', height: 800 })).toBe('mugs/red/hero-1.800h.jpg');
    expect(webCopyPath('hero-1.png', { format: 'avif', width: 1600, height: 900 })).toBe('hero-1.1600x900.avif');
    expect(webCopyPath('hero-1.png', { format: 'png' })).toBe('hero-1.full.png');
    // A dot in a folder's name is not the file's extension.
    expect(webCopyPath('v1.2/hero', { format: 'webp', width: 10 })).toBe('v1.2/hero.10w.webp');
  });
});
