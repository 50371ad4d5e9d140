import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';

/** uPlot's browser build and its stylesheet, as text: the review app serves them, the gallery inlines them. */
export interface UplotAssets {
  js: string;
  css: string;
}

let cached: Promise<UplotAssets> | undefined;

export function uplotAssets(): Promise<UplotAssets> {
  cached ??= (async () => {
    const require = createRequire(import.meta.url);
    const [js, css] = await Promise.all([
      readFile(require.resolve('uplot/dist/uPlot.iife.min.js'), 'utf8'),
      readFile(require.resolve('uplot/dist/uPlot.min.css'), 'utf8'),
    ]);
    return { js, css };
  })();
  return cached;
}

/**
 * Draws the run's three plots (submissions per window against the limit,
 * credits against the daily cap and the budget, jobs in flight against the
 * slots) into an element, from a RunSeries; `update` redraws them with new
 * data. Browser code, shared by the review app and the static gallery; it
 * needs the global uPlot.
 */
export const PLOTS_SCRIPT = `
window.genbatchPlots = (function () {
  var charts = [];
  var root = null;
  function constant(t, v) { return t.map(function () { return v; }); }
  function defs(s) {
    var perWindow = 'per ' + (s.windowMs >= 60000 ? (s.windowMs / 60000) + ' min' : (s.windowMs / 1000) + ' s');
    return [
      { title: 'submissions ' + perWindow, lines: [
        { label: 'sent', stroke: '#2186eb', fill: '#2186eb22', data: s.submissions },
        { label: 'limit', stroke: '#e12d39', dash: [6, 4], data: constant(s.t, s.submitLimit) }] },
      // Scaled to the credits and the budget: a daily cap far above them would flatten the line to nothing.
      { title: 'credits charged (net)', max: Math.max(10, Math.max.apply(null, s.credits.concat([0])) * 1.25, (s.budget || 0) * 1.1), lines: [
        { label: 'credits', stroke: '#27ab83', fill: '#27ab8322', data: s.credits },
        { label: 'daily cap', stroke: '#f7c948', dash: [6, 4], data: s.capAllowed }]
        .concat(s.budget ? [{ label: 'budget', stroke: '#e12d39', dash: [2, 3], data: constant(s.t, s.budget) }] : []) },
      { title: 'jobs in flight', lines: [
        { label: 'in flight', stroke: '#9446ed', fill: '#9446ed22', data: s.inFlight },
        { label: 'slots', stroke: '#e12d39', dash: [6, 4], data: constant(s.t, s.inFlightLimit) }] },
    ];
  }
  function width() { return Math.max(260, Math.floor((root.clientWidth - 60) / 3) - 12); }
  function note(text) {
    var p = document.createElement('p');
    p.className = 'plots-empty';
    p.textContent = text;
    root.append(p);
  }
  function build(s) {
    root.replaceChildren();
    charts = [];
    // uPlot refuses to start in a browser whose language Intl does not know (a POSIX "en-US@posix").
    if (typeof uPlot !== 'function') return note('the plots need a browser language Intl knows');
    if (!s.t.length) {
      return note('nothing submitted yet: the plots start with the first submission');
    }
    defs(s).forEach(function (d) {
      var box = document.createElement('div');
      box.className = 'plot';
      box.dataset.title = d.title;
      root.append(box);
      var opts = {
        title: d.title, width: width(), height: 170,
        scales: { x: { time: true }, y: d.max ? { range: [0, d.max] } : {} },
        axes: [{}, { size: 56 }],
        series: [{}].concat(d.lines.map(function (l) {
          return { label: l.label, stroke: l.stroke, fill: l.fill, dash: l.dash, width: 1.5, points: { show: false } };
        })),
        legend: { live: false },
      };
      charts.push(new uPlot(opts, [s.t].concat(d.lines.map(function (l) { return l.data; })), box));
    });
  }
  return {
    draw: function (element, s) {
      root = element;
      build(s);
      window.addEventListener('resize', function () { charts.forEach(function (c) { c.setSize({ width: width(), height: 170 }); }); });
    },
    update: function (s) {
      if (!root) return;
      if (charts.length === 0 || !s.t.length) return build(s);
      defs(s).forEach(function (d, i) {
        charts[i].setData([s.t].concat(d.lines.map(function (l) { return l.data; })));
      });
    },
  };
})();
`;

export const PLOTS_STYLE = `
#plots { display: flex; flex-wrap: wrap; gap: 12px; padding: 8px 16px 0; }
#plots .plot { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 4px; }
#plots .u-title { font-size: 12px; font-weight: 600; }
#plots .u-legend { font-size: 11px; }
.plots-empty { color: var(--muted); margin: 4px 0; }
`;
