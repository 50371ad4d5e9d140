import { PLOTS_SCRIPT, PLOTS_STYLE, uplotAssets } from '../report/plots.js';
import { APP_SCRIPT } from './app-script.js';
import { APP_STYLE, PAGE_HTML } from './page.js';

export interface Asset {
  type: string;
  body: string;
}

/** What the review app's page is made of, by path: every file its own, so the page's CSP needs no inline code. */
export interface PageAssets {
  byPath: ReadonlyMap<string, Asset>;
}

export async function pageAssets(): Promise<PageAssets> {
  const uplot = await uplotAssets();
  const js = 'text/javascript; charset=utf-8';
  const css = 'text/css; charset=utf-8';
  return {
    byPath: new Map<string, Asset>([
      ['/', { type: 'text/html; charset=utf-8', body: PAGE_HTML }],
      ['/app.js', { type: js, body: `${PLOTS_SCRIPT}\n${APP_SCRIPT}` }],
      ['/app.css', { type: css, body: `${APP_STYLE}\n${PLOTS_STYLE}` }],
      ['/uplot.js', { type: js, body: uplot.js }],
      ['/uplot.css', { type: css, body: uplot.css }],
    ]),
  };
}
