import { pages } from '../report/pages.js';

export interface Asset {
  type: string;
  body: string;
}

/** What the review app's page is made of, by path: every file its own, so the page's CSP needs no inline code. */
export interface PageAssets {
  byPath: ReadonlyMap<string, Asset>;
}

export async function pageAssets(): Promise<PageAssets> {
  const { review, uplot } = await pages();
  const js = 'text/javascript; charset=utf-8';
  const css = 'text/css; charset=utf-8';
  return {
    byPath: new Map<string, Asset>([
      ['/', { type: 'text/html; charset=utf-8', body: review.html }],
      ['/app.js', { type: js, body: review.js }],
      ['/app.css', { type: css, body: review.css }],
      ['/uplot.js', { type: js, body: uplot.js }],
      ['/uplot.css', { type: css, body: uplot.css }],
    ]),
  };
}
