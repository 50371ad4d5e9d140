import { PLOTS_SCRIPT, PLOTS_STYLE, type UplotAssets } from './plots.js';
import type { RunSeries } from './series.js';
import { formatDuration } from '../estimate/index.js';
import type { ItemState } from '../store/index.js';
import { escapeHtml as esc, relativeUrl } from './html.js';
import { summarizeRows, type ResultRow, type ResultSummary } from './results.js';

/** What the page says above its cards. */
export interface GalleryHeader {
  title: string;
  generatedAt: number;
  summary: ResultSummary;
  credits: { charged: number; refunded: number; net: number };
  failures: Readonly<Record<string, number>>;
  run: { seconds: number; sessions: number };
  /** Items and credits net per tag (of the items that have tags). */
  tags?: readonly { tag: string; items: number; net: number }[];
  /** The run's plots (as genbatch review draws them), with uPlot inlined: the page stays one file. */
  plots?: { series: RunSeries; uplot: UplotAssets };
}

/** A whole page from rows in hand. */
export interface GalleryInput extends Omit<GalleryHeader, 'summary'> {
  rows: readonly ResultRow[];
  /** Item id → poster URL, for videos. */
  posters: ReadonlyMap<string, string>;
}

/** The states the filters always offer; others appear when some item is in them. */
const FILTER_STATES: readonly ItemState[] = ['done', 'failed', 'blocked', 'skipped'];
const ALL_STATES: readonly ItemState[] = [
  'done',
  'failed',
  'rejected',
  'blocked',
  'skipped',
  'pending',
  'queued',
  'submitting',
  'maybe_accepted',
  'running',
  'downloading',
];

/**
 * One HTML file that shows a run's outputs: no server, no network (a CSP
 * forbids it), everything inline but the outputs, which it links relatively.
 * The items travel as JSON and the page draws the cards that match the
 * filters a few hundred at a time: a 100,000-item catalog opens in seconds,
 * where as many static cards took a minute.
 */
export function renderGallery(g: GalleryInput): string {
  const cards = g.rows.map((r) => galleryCard(r, g.posters.get(r.id)));
  return `${galleryHead({ ...g, summary: summarizeRows(g.rows) })}${cards.join(',')}${galleryTail()}`;
}

/**
 * The page is its head, the cards' JSON joined by commas, and its tail: a
 * writer streams the cards a page of rows at a time between the two.
 */
export function galleryHead(g: GalleryHeader): string {
  const { states: stateCounts, models: modelCounts, items } = g.summary;
  const states = ALL_STATES.filter((s) => FILTER_STATES.includes(s) || stateCounts.has(s));
  const failures = Object.entries(g.failures);
  const summary = [
    `<span class="stat"><b>${esc(items)}</b> items</span>`,
    ...states
      .filter((s) => stateCounts.has(s))
      .map((s) => `<span class="stat s-${s}"><b>${esc(stateCounts.get(s)!)}</b> ${s}</span>`),
    `<span class="stat"><b>${esc(g.credits.net)}</b> credits net (${esc(g.credits.charged)} charged, ${esc(g.credits.refunded)} refunded)</span>`,
    failures.length
      ? `<span class="stat failures">failures: ${failures.map(([code, n]) => `<code>${esc(code)}</code> ${esc(n)}`).join(', ')}</span>`
      : '<span class="stat failures">no failures</span>',
    `<span class="stat">run time <b>${esc(formatDuration(g.run.seconds))}</b>${g.run.sessions > 1 ? ` over ${esc(g.run.sessions)} sessions` : ''}</span>`,
    ...(g.tags ?? []).map(
      (t) => `<span class="stat tag">tag <b>${esc(t.tag)}</b>: ${esc(t.items)} items, ${esc(t.net)} credits net</span>`,
    ),
  ].join('');
  // Items not yet run are placeholders: hidden at first when there is anything else to look at (a stopped run of 20,000 showed 19,953 of them).
  const hidePending = (stateCounts.get('pending') ?? 0) < items;
  const stateFilters = states
    .map(
      (s) =>
        `<label class="chip s-${s}"><input type="checkbox" name="state" value="${s}"${s === 'pending' && hidePending ? '' : ' checked'}> ${s} <span class="n">${stateCounts.get(s) ?? 0}</span></label>`,
    )
    .join('');
  const modelOptions = [...modelCounts].map(([m, n]) => `<option value="${esc(m)}">${esc(m)} (${n})</option>`).join('');
  // Group by a row column (all scenes of one sku), or by prompt (the same prompt across models, side by side).
  const groupOptions = ['prompt', ...(modelCounts.size > 1 ? ['model'] : []), ...g.summary.valueNames]
    .map((k) => `<option value="${esc(k)}">${esc(k)}</option>`)
    .join('');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src 'self' data:; media-src 'self'; style-src 'unsafe-inline'; script-src 'unsafe-inline'">
<title>${esc(g.title)} · genbatch results</title>
<style>${STYLE}${g.plots ? `${g.plots.uplot.css}${PLOTS_STYLE}` : ''}</style>
</head>
<body>
<header>
<h1>${esc(g.title)}</h1>
<p class="generated">generated ${esc(new Date(g.generatedAt).toISOString())} by genbatch · data in results.jsonl and results.csv</p>
<section class="summary" aria-label="summary">${summary}</section>
<form class="filters" aria-label="filters">
<fieldset><legend>state</legend>${stateFilters}</fieldset>
<label>model <select id="model"><option value="">all models</option>${modelOptions}</select></label>
<label>search <input type="search" id="search" placeholder="id or prompt" autocomplete="off"></label>
<label>group by <select id="group"><option value="">nothing</option>${groupOptions}</select></label>
<label>density <select id="density"><option value="comfortable">comfortable</option><option value="compact">compact</option><option value="thumbnails">many small thumbnails</option></select></label>
<output id="shown">${items} of ${items} shown</output>
</form>
</header>
${g.plots ? plotsSection(g.plots) : ''}<noscript><p class="noscript">The gallery draws its cards with JavaScript; results.csv lists every item.</p></noscript>
<main id="grid"></main>
<p id="none" hidden>No item matches these filters.</p>
<p id="more-wrap" hidden><button id="more" type="button">show more</button></p>
<div id="lightbox" role="dialog" aria-modal="true" aria-label="output" hidden>
<div class="lb-bar"><button type="button" id="lb-prev" aria-label="previous">←</button><span id="lb-pos"></span><button type="button" id="lb-next" aria-label="next">→</button><button type="button" id="lb-close" aria-label="close">✕ Esc</button></div>
<div class="lb-body"><div id="lb-media"></div><dl id="lb-meta"></dl></div>
</div>
<script type="application/json" id="items">[`;
}

/** The run's plots, drawn by uPlot from the series in the page. */
function plotsSection(plots: NonNullable<GalleryHeader['plots']>): string {
  return `<section id="plots" aria-label="plots"></section>
<script>try {
${plots.uplot.js}
} catch (error) { console.warn('the plots could not be drawn:', error.message); }</script>
<script>${PLOTS_SCRIPT}
genbatchPlots.draw(document.getElementById('plots'), ${asJsonInHtml(plots.series)});</script>
`;
}

/** One card's data, as it sits in the page's JSON array. */
export function galleryCard(r: ResultRow, poster: string | undefined): string {
  return `\n${asJsonInHtml(cardData(r, poster))}`;
}

export const galleryTail = () => `\n]</script>
<script>${SCRIPT}</script>
</body>
</html>
`;

/** What the page needs of an item to draw its card; file names as relative URLs. */
interface CardData {
  id: string;
  state: ItemState;
  type: 'image' | 'video';
  model: string;
  prompt: string;
  files: string[];
  charged: number;
  refunded: number;
  code: string | null;
  message: string | null;
  poster?: string;
  aspectRatio: string | null;
  resolution: string | null;
  duration: string | null;
  /** The job whose outputs these are (the last attempt's). */
  jobId: string | null;
  /** The item's row columns and matrix values, to group by. */
  values: Record<string, string>;
  /** The review decision on the current version (read-only here: genbatch review makes them). */
  review?: { decision: 'approved' | 'rejected'; note: string | null };
  /** The current version, when the item was regenerated (2 and up). */
  version?: number;
}

function cardData(r: ResultRow, poster: string | undefined): CardData {
  return {
    id: r.id,
    state: r.state,
    type: r.type,
    model: r.model,
    prompt: r.prompt,
    files: r.files.map((f) => relativeUrl(f.path)),
    charged: r.creditsCharged,
    refunded: r.creditsRefunded,
    code: r.errorCode,
    message: r.errorMessage,
    ...(poster ? { poster } : {}),
    aspectRatio: r.aspectRatio,
    resolution: r.resolution,
    duration: r.duration,
    jobId: r.jobIds.at(-1) ?? null,
    values: r.values,
    ...(r.review ? { review: { decision: r.review.decision, note: r.review.note } } : {}),
    ...(r.version && r.version > 1 ? { version: r.version } : {}),
  };
}

/** JSON that cannot end its <script> element early, whatever a prompt holds. */
const asJsonInHtml = (value: unknown) => JSON.stringify(value).replace(/</g, '\\u003c');

const STYLE = `
:root { color-scheme: light dark; --bg: #f5f7fa; --card: #fff; --text: #1f2933; --muted: #616e7c; --line: #d9e2ec; }
@media (prefers-color-scheme: dark) { :root { --bg: #12161b; --card: #1c232b; --text: #e4e7eb; --muted: #9aa5b1; --line: #323f4b; } }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.4 system-ui, sans-serif; background: var(--bg); color: var(--text); }
header { position: sticky; top: 0; z-index: 1; background: var(--bg); border-bottom: 1px solid var(--line); padding: 12px 16px; }
h1 { font-size: 18px; margin: 0; }
.generated { color: var(--muted); margin: 2px 0 8px; font-size: 12px; }
.summary { display: flex; flex-wrap: wrap; gap: 6px 16px; margin-bottom: 8px; }
.filters { display: flex; flex-wrap: wrap; align-items: center; gap: 8px 16px; }
fieldset { border: 0; margin: 0; padding: 0; display: flex; flex-wrap: wrap; gap: 6px; align-items: center; }
legend { float: left; margin-right: 6px; color: var(--muted); }
.chip { border: 1px solid var(--line); border-radius: 999px; padding: 2px 10px; cursor: pointer; user-select: none; }
.chip .n { color: var(--muted); }
#shown { color: var(--muted); }
main { display: grid; grid-template-columns: repeat(auto-fill, minmax(240px, 1fr)); gap: 12px; padding: 16px; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 8px; overflow: hidden; display: flex; flex-direction: column; }
#none[hidden], #more-wrap[hidden] { display: none; }
#more-wrap { text-align: center; }
#more { font: inherit; padding: 6px 16px; }
.noscript { padding: 16px; }
.media { flex: none; aspect-ratio: 1; min-height: 0; overflow: hidden; background: #0001; display: flex; }
.media a { display: flex; width: 100%; }
.media img, .media video { display: block; width: 100%; height: 100%; object-fit: contain; background: #0002; }
.empty { margin: auto; text-transform: uppercase; letter-spacing: .08em; color: var(--muted); }
.meta { padding: 8px 10px 10px; }
h2 { font-size: 14px; margin: 0 0 4px; display: flex; justify-content: space-between; align-items: flex-start; gap: 8px; overflow-wrap: anywhere; }
.prompt { margin: 0 0 4px; max-height: 5.6em; overflow: auto; }
.facts, .files { color: var(--muted); margin: 0; }
.badge { font-size: 11px; font-weight: 600; border-radius: 4px; padding: 1px 6px; background: #0001; white-space: nowrap; }
.s-done.badge { background: #c6f7e2; color: #014d40; }
.s-failed.badge, .s-rejected.badge { background: #ffe3e3; color: #8a041a; }
.s-blocked.badge { background: #ffe8d9; color: #841003; }
.s-skipped.badge { background: #e4e7eb; color: #3e4c59; }
.r-approved.badge { background: #d9f2ff; color: #035388; }
.r-rejected.badge { background: #fde2f3; color: #620042; }
.error { margin: 6px 0 0; padding: 6px 8px; border-radius: 4px; background: #ffe3e3; color: #8a041a; word-break: break-word; }
#none { text-align: center; color: var(--muted); }
main.compact { grid-template-columns: repeat(auto-fill, minmax(150px, 1fr)); gap: 8px; padding: 8px 16px; }
main.compact .prompt, main.compact .files { display: none; }
main.thumbnails { grid-template-columns: repeat(auto-fill, minmax(88px, 1fr)); gap: 4px; padding: 8px; }
main.thumbnails .meta { display: none; }
main.thumbnails .card { border-radius: 4px; }
.group { grid-column: 1 / -1; margin: 8px 0 -4px; font-size: 13px; color: var(--muted); border-bottom: 1px solid var(--line); overflow-wrap: anywhere; }
.group b { color: var(--text); }
.media a, h2 .id { cursor: zoom-in; }
#lightbox { position: fixed; inset: 0; z-index: 2; background: #111; color: #eee; display: flex; flex-direction: column; }
#lightbox[hidden] { display: none; }
.lb-bar { display: flex; gap: 8px; align-items: center; padding: 8px 12px; }
.lb-bar button { font: inherit; padding: 4px 10px; }
#lb-close { margin-left: auto; }
.lb-body { flex: 1; min-height: 0; display: flex; gap: 16px; padding: 0 16px 16px; }
#lb-media { flex: 1; min-width: 0; display: flex; align-items: center; justify-content: center; }
#lb-media img, #lb-media video { width: 100%; height: 100%; object-fit: contain; image-rendering: auto; }
#lb-meta { width: 300px; margin: 0; overflow: auto; overflow-wrap: anywhere; }
#lb-meta dt { color: #aaa; font-size: 12px; margin-top: 8px; }
#lb-meta dd { margin: 0; }
`;

// Draws the cards that match the filters, a page at a time; every value goes in as text, never as markup.
const SCRIPT = `
const PAGE = 200;
const items = JSON.parse(document.getElementById('items').textContent);
const grid = document.getElementById('grid');
const model = document.getElementById('model');
const more = document.getElementById('more');
const search = document.getElementById('search');
const density = document.getElementById('density');
let matching = items;
let drawn = 0;
// What a search looks in, lower-cased once: a 100,000-item catalog filters as you type.
for (const item of items) item.hay = (item.id + '\\n' + item.prompt).toLowerCase();

function el(tag, props, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (key === 'text') node.textContent = value;
    else node.setAttribute(key, value);
  }
  for (const child of children) if (child) node.append(child);
  return node;
}

function media(item) {
  const src = item.files[0];
  if (!src) return el('div', { class: 'empty s-' + item.state, text: item.state === 'done' ? 'no output' : item.state });
  if (item.type === 'video') {
    const video = el('video', { controls: '', playsinline: '', preload: 'none', src });
    if (item.poster) video.setAttribute('poster', item.poster);
    return video;
  }
  return el('a', { href: src, class: 'open' }, el('img', { src, alt: item.prompt, loading: 'lazy', decoding: 'async' }));
}

// The lightbox: the full-size output and its facts; arrows walk the items that match the filters, Esc closes.
const lightbox = document.getElementById('lightbox');
let shownAt = -1;

function openAt(index) {
  if (index < 0 || index >= matching.length) return;
  shownAt = index;
  const item = matching[index];
  const src = item.files[0];
  const full = !src ? el('p', { text: item.state === 'done' ? 'no output' : item.state })
    : item.type === 'video' ? el('video', { controls: '', src, ...(item.poster ? { poster: item.poster } : {}) })
    : el('img', { src, alt: item.prompt });
  document.getElementById('lb-media').replaceChildren(full);
  const facts = [['id', item.id], ['state', item.state], ['prompt', item.prompt], ['model', item.model], ['aspect ratio', item.aspectRatio], ['resolution', item.resolution],
    ['duration', item.duration ? item.duration + ' s' : null], ['credits', item.refunded ? item.charged + ' charged, ' + item.refunded + ' refunded' : String(item.charged)],
    ['job', item.jobId], ['file', item.files.join(' ') || null], ['version', item.version ? String(item.version) : null],
    ['review', item.review ? item.review.decision + (item.review.note ? ': ' + item.review.note : '') : null], ['error', item.code ? item.code + ' ' + (item.message || '') : null]];
  document.getElementById('lb-meta').replaceChildren(...facts.filter(([, v]) => v).flatMap(([k, v]) => [el('dt', { text: k }), el('dd', { class: 'lb-' + k.replace(' ', '-'), text: v })]));
  document.getElementById('lb-pos').textContent = (index + 1) + ' of ' + matching.length;
  lightbox.hidden = false;
}

function closeLightbox() {
  lightbox.hidden = true;
  document.getElementById('lb-media').replaceChildren();
}

grid.addEventListener('click', (event) => {
  const opener = event.target.closest('.open, h2 .id');
  if (!opener) return;
  event.preventDefault();
  openAt(matching.findIndex((item) => item.id === opener.closest('.card').dataset.id));
});
document.getElementById('lb-prev').addEventListener('click', () => openAt(shownAt - 1));
document.getElementById('lb-next').addEventListener('click', () => openAt(shownAt + 1));
document.getElementById('lb-close').addEventListener('click', closeLightbox);
document.addEventListener('keydown', (event) => {
  if (lightbox.hidden) return;
  if (event.key === 'Escape') closeLightbox();
  else if (event.key === 'ArrowRight') openAt(shownAt + 1);
  else if (event.key === 'ArrowLeft') openAt(shownAt - 1);
});

function card(item) {
  const credits = item.refunded ? item.charged + ' credits, ' + item.refunded + ' refunded' : item.charged + ' credits';
  const files = item.files.length > 1 ? el('p', { class: 'files' }) : null;
  if (files) item.files.forEach((src, i) => files.append(el('a', { href: src, text: String(i + 1) }), ' '));
  return el('article', { class: 'card', 'data-id': item.id, 'data-state': item.state, 'data-model': item.model },
    el('div', { class: 'media' }, media(item)),
    el('div', { class: 'meta' },
      el('h2', {}, el('span', { class: 'id', text: item.id }), el('span', { class: 'badge s-' + item.state, text: item.state }),
        item.review ? el('span', { class: 'badge review r-' + item.review.decision, text: item.review.decision, title: item.review.note || '' }) : null),
      el('p', { class: 'prompt', text: item.prompt }),
      el('p', { class: 'facts' }, el('span', { class: 'model', text: item.model }), ' · ', el('span', { class: 'credits', text: credits })),
      item.code ? el('p', { class: 'error' }, el('code', { text: item.code }), ' ' + (item.message || '')) : null,
      files));
}

const groupBy = document.getElementById('group');
let groupSizes = new Map();
const keyOf = (item) => (groupBy.value === 'prompt' ? item.prompt : groupBy.value === 'model' ? item.model : item.values[groupBy.value] ?? '');

function drawMore() {
  const next = matching.slice(drawn, drawn + PAGE);
  const nodes = [];
  next.forEach((item, i) => {
    // A heading wherever the group changes: the items were put in group order, each group in manifest order.
    const before = drawn + i > 0 ? matching[drawn + i - 1] : undefined;
    if (groupBy.value && (!before || keyOf(before) !== keyOf(item))) {
      nodes.push(el('h3', { class: 'group' }, groupBy.value + ': ', el('b', { text: keyOf(item) || '(none)' }), ' · ' + groupSizes.get(keyOf(item))));
    }
    nodes.push(card(item));
  });
  grid.append(...nodes);
  drawn += next.length;
  document.getElementById('more-wrap').hidden = drawn >= matching.length;
}

function apply() {
  const states = new Set(Array.from(document.querySelectorAll('input[name=state]:checked'), (i) => i.value));
  const words = search.value.toLowerCase().split(/\\s+/).filter(Boolean);
  matching = items.filter((item) => states.has(item.state) && (!model.value || item.model === model.value) && words.every((w) => item.hay.includes(w)));
  if (groupBy.value) {
    // Groups in the order their first item comes in the manifest; a stable sort keeps manifest order inside each.
    const firstAt = new Map();
    groupSizes = new Map();
    matching.forEach((item, i) => { const k = keyOf(item); if (!firstAt.has(k)) firstAt.set(k, i); groupSizes.set(k, (groupSizes.get(k) || 0) + 1); });
    matching = matching.map((item, i) => [firstAt.get(keyOf(item)), i, item]).sort((a, b) => a[0] - b[0] || a[1] - b[1]).map((t) => t[2]);
  }
  grid.replaceChildren();
  drawn = 0;
  drawMore();
  document.getElementById('shown').textContent = matching.length + ' of ' + items.length + ' shown';
  document.getElementById('none').hidden = matching.length > 0;
}

document.querySelector('.filters').addEventListener('change', (event) => {
  if (event.target === density) grid.className = density.value === 'comfortable' ? '' : density.value;
  else apply();
});
search.addEventListener('input', apply);
// Enter in the search box must not submit the form (a reload).
document.querySelector('.filters').addEventListener('submit', (event) => event.preventDefault());
more.addEventListener('click', drawMore);
// Scrolling near the end draws the next page.
new IntersectionObserver((seen) => { if (seen.some((e) => e.isIntersecting)) drawMore(); }, { rootMargin: '800px' }).observe(more);
apply();
`;
