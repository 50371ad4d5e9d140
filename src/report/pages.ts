import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { builtDir } from '../util/built.js';

/** A page's own script and stylesheet, as text. */
export interface PageCode {
  js: string;
  css: string;
}

/** What the pages are made of: the review app's page, script and styles, the gallery's, and uPlot's. */
export interface Pages {
  review: PageCode & { html: string };
  gallery: PageCode;
  uplot: PageCode;
}

/** Where the build put the pages' bundles (scripts/bundle.mjs: src/browser into dist/pages). */
const pagesDir = () => join(builtDir(), 'pages');

let cached: Promise<Pages> | undefined;

export function pages(): Promise<Pages> {
  cached ??= (async () => {
    const dir = pagesDir();
    const require = createRequire(import.meta.url);
    const read = (path: string) => readFile(path, 'utf8');
    const [reviewJs, reviewCss, reviewHtml, galleryJs, galleryCss, uplotJs, uplotCss] = await Promise.all([
      read(join(dir, 'review-app.js')),
      read(join(dir, 'review-app.css')),
      read(join(dir, 'review-page.html')),
      read(join(dir, 'gallery.js')),
      read(join(dir, 'gallery.css')),
      read(join(dir, 'uplot.js')),
      read(require.resolve('uplot/dist/uPlot.min.css')),
    ]);
    return {
      review: { js: reviewJs, css: reviewCss, html: reviewHtml },
      gallery: { js: galleryJs, css: galleryCss },
      uplot: { js: uplotJs, css: uplotCss },
    };
  })();
  return cached;
}

/** Code put inside a page's <script> element: nothing in it may close the element early. */
export const inScript = (code: string) => code.replace(/<\/(script)/gi, '<\\/$1');
