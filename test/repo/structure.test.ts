import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { stackedDocComments } from '../../scripts/doc-comments.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const src = join(root, 'src');

function walk(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? walk(join(dir, e.name)) : [join(dir, e.name)],
  );
}

/** The folder of `src/` a file belongs to, at `depth` levels (runner/ has rooms of its own). */
function folderOf(file: string, depth: number): string {
  const parts = relative(src, file).split(sep).slice(0, -1);
  return parts.slice(0, depth).join('/') || '.';
}

/** Edges between folders: which folder's files import which other folder's, for folders at `depth`. */
function folderGraph(files: string[], depth: number): Map<string, Set<string>> {
  const graph = new Map<string, Set<string>>();
  for (const file of files) {
    const from = folderOf(file, depth);
    for (const m of readFileSync(file, 'utf8').matchAll(/from\s+['"](\.[^'"]+)['"]/g)) {
      const target = resolve(dirname(file), m[1]!);
      if (!target.startsWith(src)) continue;
      const to = folderOf(join(target, 'x'), depth);
      const toFile = folderOf(target, depth);
      // An import of a folder's index or of a file: the folder holding what is imported.
      const into = existsSync(`${target}.ts`) || existsSync(target.replace(/\.js$/, '.ts')) ? toFile : to;
      if (into !== from) (graph.get(from) ?? graph.set(from, new Set()).get(from)!).add(into);
    }
  }
  return graph;
}

/** Every cycle's first loop found, as "a -> b -> a"; none when the graph points one way. */
function cycles(graph: Map<string, Set<string>>): string[] {
  const found: string[] = [];
  const state = new Map<string, 'open' | 'done'>();
  const visit = (node: string, path: string[]) => {
    if (state.get(node) === 'done') return;
    if (state.get(node) === 'open') {
      found.push([...path.slice(path.indexOf(node)), node].join(' -> '));
      return;
    }
    state.set(node, 'open');
    for (const next of graph.get(node) ?? []) visit(next, [...path, node]);
    state.set(node, 'done');
  };
  for (const node of graph.keys()) visit(node, []);
  return found;
}

describe("the code's floors", () => {
  const files = walk(src).filter((f) => f.endsWith('.ts'));

  it("lint finds a doc comment stacked on another (an editor shows only the second), and none on a file's head", () => {
    const text = ['/** The file. */', '', '/** Old words, left behind. */', '/**', ' * What f does.', ' */', 'f();'];
    expect(stackedDocComments(text.join('\n'))).toEqual([4]);
    expect(stackedDocComments('/** One. */\nconst a = 1;\n/** Two. */\nconst b = 2;\n')).toEqual([]);
  });

  it('every flag of every command is declared in src/options, none inline in the CLI', () => {
    const inline = files
      .filter((f) => !relative(src, f).startsWith(`options${sep}`))
      .filter((f) => /\.(option|requiredOption)\(|new Option\(/.test(readFileSync(f, 'utf8')))
      .map((f) => relative(root, f));
    expect(inline).toEqual([]);
  });

  it('the SQLite driver is loaded in one place, the one built for this Node (tests and benches included)', () => {
    const everywhere = [...files, ...walk(join(root, 'test')), ...walk(join(root, 'bench'))].filter((f) =>
      /\.(ts|mjs)$/.test(f),
    );
    const direct = everywhere
      .filter((f) => !f.endsWith(join('store', 'driver.ts')))
      .filter((f) => /^import (?!type )[^;]*from 'better-sqlite3(-node20)?'/m.test(readFileSync(f, 'utf8')))
      .map((f) => relative(root, f));
    expect(direct).toEqual([]);
  });

  it('no folder of src/ imports a folder that imports it back, however far round', () => {
    expect(cycles(folderGraph(files, 1))).toEqual([]);
  });

  it("the runner's rooms point one way too", () => {
    const runner = files.filter((f) => relative(src, f).startsWith(`runner${sep}`));
    expect(cycles(folderGraph(runner, 2))).toEqual([]);
  });

  it("a run's places (state, outputs, log) are worked out in runner/places.ts alone", () => {
    const opening = files.filter((f) => /^(runner|library)\//.test(relative(src, f).split(sep).join('/')));
    const working = opening.filter(
      (f) =>
        !f.endsWith(`runner${sep}places.ts`) &&
        /\b(statePathFor|PLACE_SUFFIX|resolveOutDir)\b/.test(readFileSync(f, 'utf8')) &&
        /\b(prepareRun|openRun|Runner)\b/.test(readFileSync(f, 'utf8')),
    );
    expect(working.map((f) => relative(src, f))).toEqual([]);
  });

  it("design.md's map of the runner names every room of src/runner, and no room that is not there", () => {
    const design = readFileSync(join(root, 'docs', 'design.md'), 'utf8');
    const map = design.slice(design.indexOf('## A map of the runner'));
    const table = map.slice(0, map.indexOf('\n## '));
    const named = [...table.matchAll(/^\| `([a-z-]+)\/` \|/gm)].map((m) => m[1]).sort();
    const rooms = readdirSync(join(src, 'runner'), { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => e.name)
      .sort();
    expect(named).toEqual(rooms);
    // The root's files, as the map lists them.
    const rootRow = /^\| root \| (.+) \|$/m.exec(table)?.[1] ?? '';
    const listed = [...rootRow.matchAll(/`([a-z-]+\.ts)`/g)].map((m) => m[1]).sort();
    const atRoot = readdirSync(join(src, 'runner'))
      .filter((f) => f.endsWith('.ts') && f !== 'index.ts')
      .sort();
    expect(listed).toEqual(atRoot);
  });
});

describe('prose that cannot drift', () => {
  const pages = ['README.md', 'CONTRIBUTING.md', ...readdirSync(join(root, 'docs')).map((f) => `docs/${f}`)].filter(
    (f) => f.endsWith('.md'),
  );

  it('every file or folder of the repository that README.md, CONTRIBUTING.md and docs/ name is there', () => {
    const missing: string[] = [];
    const tops = /^(src|test|bench|docs|scripts|schemas|manifests|\.ci)\//;
    for (const page of pages) {
      const text = readFileSync(join(root, page), 'utf8');
      for (const m of text.matchAll(/`([^`\s]+)`/g)) {
        const named = m[1]!.replace(/[),.:;]+$/, '');
        if (named.includes('*') || named.includes('<') || named.includes('{')) continue;
        // A path from the top, or a file of src/ named by its folder inside src (`runner/publish/`, `cli/flags.ts`).
        const candidates = tops.test(named)
          ? [named]
          : /^[a-z-]+\/[\w./-]*$/.test(named) && existsSync(join(src, named.split('/')[0]!))
            ? [join('src', named)]
            : [];
        for (const c of candidates) if (!existsSync(join(root, c))) missing.push(`${page}: ${named}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it('no page points outside the repository', () => {
    for (const page of pages)
      expect(readFileSync(join(root, page), 'utf8'), page).not.toMatch(/\.\.\/shared|shared\/hooks/);
  });
});

describe('one table of exit codes', () => {
  it("docs/reference.md's table is the one every command's --help prints", async () => {
    const { EXIT_MEANINGS } = await import('../../src/util/exit-error.js');
    const reference = readFileSync(join(root, 'docs', 'reference.md'), 'utf8');
    const section = reference.slice(reference.indexOf('## Exit codes'));
    const rows = [...section.slice(0, section.indexOf('\n## ')).matchAll(/^\| (\d+) \| (.+) \|$/gm)].map((m) => ({
      code: Number(m[1]),
      meaning: m[2],
    }));
    expect(rows).toEqual(EXIT_MEANINGS);
  });
});
