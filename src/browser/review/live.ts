import type { NewOutputData, ReviewSummaryData, RunSeries } from '../data.js';
import { byId, el } from '../dom.js';
import { RunPlots } from '../plots.js';
import { refreshVisible, reload } from './grid.js';
import { app, cardImageUrl, fmt, withToken } from './state.js';
import { askForThumbs, showThumb } from './thumbs.js';

/** The live header, plots and newest outputs, from the server's events. */
const plots = new RunPlots();

function clock(ms: number): string {
  return new Date(ms).toTimeString().slice(0, 8);
}

function duration(s: number): string {
  if (s < 90) return `${Math.round(s)} s`;
  if (s < 5400) return `${Math.round(s / 60)} min`;
  return `${(s / 3600).toFixed(1)} h`;
}

function stat(label: string, value: string, cls = ''): HTMLElement {
  return el('span', { className: `stat ${cls}`, 'data-stat': label }, el('b', { text: value }), ` ${label}`);
}

export function drawSummary(): void {
  const s = app.summary;
  if (!s) return;
  byId('title').textContent = s.title;
  document.title = `${s.title} · genbatch review`;
  const parts = [stat('items', fmt(s.items))];
  for (const [st, n] of Object.entries(s.states)) parts.push(stat(st, fmt(n ?? 0)));
  parts.push(
    stat('approved', fmt(s.review.approved)),
    stat('rejected', fmt(s.review.rejected)),
    stat('unreviewed', fmt(s.review.unreviewed)),
  );
  const budget = s.credits.budget ? ` of ${fmt(s.credits.budget)} budget` : '';
  const over = s.credits.budget && s.credits.net > s.credits.budget ? 'over' : '';
  parts.push(stat(`credits net${budget}`, fmt(s.credits.net), over));
  parts.push(stat(`today of ${fmt(s.today.dailyCap)} daily cap`, fmt(s.today.charged)));
  const windowText =
    s.pace.timeScale > 1 ? `per window (time x${s.pace.timeScale})` : `per ${duration(s.pace.windowMs / 1000)}`;
  parts.push(stat(`of ${s.pace.limit} submissions ${windowText}`, fmt(s.pace.sent)));
  parts.push(stat('in flight', fmt(s.inFlight)));
  if (s.eta) parts.push(stat(`left (ETA ${clock(Date.parse(s.eta.at))})`, duration(s.eta.seconds)));
  byId('summary').replaceChildren(...parts);
  byId('run').textContent = s.run.pausedSince
    ? `paused since ${new Date(s.run.pausedSince).toString().slice(0, 24)}`
    : s.run.running
      ? 'a run is going'
      : 'no run is going';
  fillSelect('f-state', Object.keys(s.states));
  fillSelect('f-model', s.models);
  fillSelect('f-tag', s.tags);
  byId('f-tag-label').hidden = s.tags.length === 0;
}

function fillSelect(id: string, values: readonly string[]): void {
  const select = byId<HTMLSelectElement>(id);
  const have = new Set(Array.from(select.options, (o) => o.value));
  for (const v of values) if (!have.has(v)) select.append(el('option', { value: v, text: v }));
}

function addNewest(outputs: NewOutputData[]): void {
  const strip = byId('newest-strip');
  for (const o of [...outputs].reverse()) {
    const node =
      o.type === 'video'
        ? el('span', { className: 'vid', text: 'video', title: o.itemId, 'data-item': o.itemId })
        : // A thumbnail, after the grid's: the cards on screen are asked for first.
          showThumb(
            el('img', {
              fetchpriority: 'low',
              alt: o.itemId,
              title: `${o.itemId}${o.version > 1 ? ` v${o.version}` : ''}`,
              'data-item': o.itemId,
            }),
            cardImageUrl({ file: o.path, copy: null }),
          );
    strip.prepend(node);
  }
  while (strip.children.length > 24) strip.lastChild?.remove();
  askForThumbs();
}

let refreshTimer: ReturnType<typeof setTimeout> | undefined;

function refreshSoon(ms: number, what: () => void): void {
  clearTimeout(refreshTimer);
  refreshTimer = setTimeout(what, ms);
}

/** Server-sent events: the summary on each commit of the run, the series, and the outputs downloaded since. */
export function connect(): void {
  const events = new EventSource(withToken('/api/events'));
  events.addEventListener('open', () => {
    byId('live').className = 'live';
  });
  events.addEventListener('error', () => {
    byId('live').className = 'live off';
  });
  events.addEventListener('summary', (e) => {
    const before = app.summary;
    app.summary = JSON.parse(e.data) as ReviewSummaryData;
    drawSummary();
    if (before && before.items !== app.summary.items) void reload(true);
    else if (before) refreshSoon(100, refreshVisible);
  });
  events.addEventListener('series', (e) => {
    const s = JSON.parse(e.data) as RunSeries;
    if (!plots.drawn) plots.draw(byId('plots'), s);
    else plots.update(s);
  });
  events.addEventListener('newest', (e) => addNewest(JSON.parse(e.data) as NewOutputData[]));
  events.addEventListener('outputs', (e) => {
    addNewest(JSON.parse(e.data) as NewOutputData[]);
    const { filter } = app;
    refreshSoon(50, () => (filter.review || filter.state || filter.q ? void reload(true) : refreshVisible()));
  });
  events.addEventListener('reset', () => {
    byId('newest-strip').replaceChildren();
    void reload(false);
  });
}
