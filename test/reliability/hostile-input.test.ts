import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve, sep } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { DEFAULT_OUTPUT_NAME, loadManifest, outputRelativePath, resolveInside } from '../../src/manifest/index.js';
import { render } from '../../src/manifest/templates.js';

const OUT = resolve('/tmp/genbatch-out');
const inside = (p: string) => {
  const rel = relative(OUT, p);
  return rel !== '' && !rel.startsWith(`..${sep}`) && rel !== '..' && !rel.startsWith(sep);
};

/** Strings a hostile manifest or CSV might carry: separators, dots, NULs, look-alikes, long runs. */
const hostile = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 80 }),
  fc.constantFrom(
    '..',
    '../x',
    '/etc/passwd',
    'a/../../b',
    'C:\\Windows',
    '\u0000',
    '．．／',
    '‥',
    'x\u202e',
    '%2e%2e%2f',
    '~/.ssh/id_rsa',
    'a'.repeat(300),
  ),
  fc.array(fc.constantFrom('..', '.', '/', '\\', 'a', '\u0000', 'é'), { maxLength: 30 }).map((a) => a.join('')),
);

const RUNS = 300;
let generated = 0;

describe('hostile input, generated', () => {
  it('no output path built from any id, model or var leaves the output dir', () => {
    fc.assert(
      fc.property(
        hostile,
        hostile,
        hostile,
        fc.integer({ min: 1, max: 9 }),
        fc.constantFrom(DEFAULT_OUTPUT_NAME, '{{model}}/{{id}}-{{n}}.{{ext}}', '{{v}}/{{id}}.{{ext}}'),
        (id, model, v, n, template) => {
          generated++;
          const out = outputRelativePath(template, {
            id,
            n,
            ext: 'png',
            model,
            type: 'image',
            vars: new Map([['v', v]]),
          });
          if (!out.ok) return true;
          expect(out.path).not.toMatch(/\u0000/);
          expect(inside(resolveInside(OUT, out.path))).toBe(true);
          return true;
        },
      ),
      { numRuns: RUNS * 3 },
    );
  });

  it('templates never throw; an unknown name is always an error, never an empty string', () => {
    const vars = fc.dictionary(fc.stringMatching(/^[a-z]{1,5}$/), fc.string({ maxLength: 10 }));
    fc.assert(
      fc.property(fc.string({ maxLength: 60 }), vars, (text, v) => {
        generated++;
        render(text, new Map(Object.entries(v))); // any text: an answer, not an exception
        return true;
      }),
      { numRuns: RUNS * 3 },
    );
    fc.assert(
      fc.property(
        fc.string({ maxLength: 20 }),
        fc.stringMatching(/^[a-z]{1,6}$/),
        fc.string({ maxLength: 20 }),
        vars,
        (before, name, after, v) => {
          generated++;
          fc.pre(!(name in v));
          const r = render(`${before}{{${name}}}${after}`, new Map(Object.entries(v)));
          expect(r.ok).toBe(false);
        },
      ),
      { numRuns: RUNS * 3 },
    );
  });

  it('the loader answers any manifest text with a result or located issues, never an exception, quickly', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'genbatch-fuzz-'));
    const anyValue = fc.jsonValue({ maxDepth: 4 });
    const manifestLike = fc.record(
      {
        version: fc.oneof(fc.constant(1), anyValue),
        items: fc.oneof(
          fc.array(
            fc.record(
              {
                id: hostile,
                prompt: fc.oneof(hostile, anyValue),
                model: fc.oneof(fc.constant('m'), anyValue),
                repeat: fc.oneof(fc.constant(2), anyValue),
              },
              { requiredKeys: ['id'] },
            ),
            { maxLength: 5 },
          ),
          anyValue,
        ),
        output: fc.oneof(fc.record({ name: hostile }), anyValue),
      },
      { requiredKeys: [] },
    );
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          manifestLike.map((m) => stringify(m)),
          fc.string({ unit: 'binary', maxLength: 400 }),
        ),
        async (text) => {
          generated++;
          writeFileSync(join(dir, 'm.yaml'), text);
          const started = Date.now();
          const { loaded, issues } = await loadManifest('m.yaml', dir);
          expect(Date.now() - started).toBeLessThan(5000); // a hang, not a slow machine
          expect(loaded !== undefined || issues.count > 0).toBe(true);
          for (const issue of issues.issues) {
            expect(issue.line).toBeGreaterThanOrEqual(1);
            expect(typeof issue.message).toBe('string');
          }
          if (loaded && issues.count === 0) {
            for (const item of loaded.items) {
              const out = outputRelativePath(loaded.outputName, {
                id: item.id,
                n: 1,
                ext: 'png',
                model: item.model,
                type: item.type,
                vars: loaded.vars,
              });
              expect(out.ok).toBe(true);
              if (out.ok) expect(inside(resolveInside(OUT, out.path))).toBe(true);
            }
          }
        },
      ),
      { numRuns: RUNS },
    );
  });

  it('CSV rows with hostile cells give items whose files stay inside, or located issues', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'genbatch-fuzz-csv-'));
    writeFileSync(
      join(dir, 'm.yaml'),
      'version: 1\nitems:\n  - rows: r.csv\n    id: "{{sku}}"\n    model: m\n    prompt: "{{title}}"\n',
    );
    const cell = hostile.map((s) => `"${s.replace(/"/g, '""')}"`);
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(cell, cell), { minLength: 1, maxLength: 20 }), async (rows) => {
        generated++;
        writeFileSync(join(dir, 'r.csv'), `sku,title\n${rows.map(([a, b]) => `${a},${b}`).join('\n')}\n`);
        const { loaded, issues } = await loadManifest('m.yaml', dir);
        if (issues.count === 0) {
          for (const item of loaded!.items) {
            const out = outputRelativePath(loaded!.outputName, {
              id: item.id,
              n: 1,
              ext: 'png',
              model: item.model,
              type: item.type,
              vars: loaded!.vars,
            });
            expect(out.ok && inside(resolveInside(OUT, out.path))).toBe(true);
          }
        }
      }),
      { numRuns: RUNS / 3 },
    );
    console.log(`hostile input: ${generated} generated cases tried`);
  });
});
