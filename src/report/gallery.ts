import type { GalleryCard, RunSeries } from '../browser/data.js';
import { inScript, pages, type Pages } from './pages.js';
import { formatDuration } from '../estimate/index.js';
import { ENDED_STATES, type ItemState, OPEN_STATES, WAITING_STATES } from '../store/index.js';
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
  /** Items waiting for a person's decision on their gates, and what they would spend once approved. */
  decisions?: { items: number; credits: number; unpriced: number };
  /** The run's plots, as genbatch review draws them (uPlot is inlined: the page stays one file). */
  plots?: RunSeries;
  /** The page's own script and styles, and uPlot's, inlined. */
  code: Pick<Pages, 'gallery' | 'uplot'>;
}

/** A whole page from rows in hand. */
export interface GalleryInput extends Omit<GalleryHeader, 'summary' | 'code'> {
  rows: readonly ResultRow[];
  /** Item id → poster URL, for videos. */
  posters: ReadonlyMap<string, string>;
}

/** The states the filters always offer; others appear when some item is in them. */
const FILTER_STATES: readonly ItemState[] = ['done', 'failed', 'blocked', 'skipped'];
/** Every state, the ended ones first, then those waiting for a person, then the open ones: the filters' order. */
const ALL_STATES: readonly ItemState[] = [...ENDED_STATES, ...WAITING_STATES, ...OPEN_STATES];

/**
 * One HTML file that shows a run's outputs: no server, no network (a CSP
 * forbids it), everything inline but the outputs, which it links relatively.
 * The items travel as JSON and the page draws the cards that match the
 * filters a few hundred at a time: a 100,000-item catalog opens in seconds,
 * where as many static cards took a minute.
 */
export async function renderGallery(g: GalleryInput): Promise<string> {
  const code = await pages();
  const cards = g.rows.map((r) => galleryCard(r, g.posters.get(r.id)));
  return `${galleryHead({ ...g, code, summary: summarizeRows(g.rows) })}${cards.join(',')}${galleryTail(code)}`;
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
    `<span class="stat"><b>${esc(items)}</b> item${items === 1 ? '' : 's'}</span>`,
    ...states
      .filter((s) => stateCounts.has(s))
      .map((s) => `<span class="stat s-${s}"><b>${esc(stateCounts.get(s)!)}</b> ${s}</span>`),
    `<span class="stat"><b>${esc(g.credits.net)}</b> credits net (${esc(g.credits.charged)} charged, ${esc(g.credits.refunded)} refunded)</span>`,
    failures.length
      ? `<span class="stat failures">failures: ${failures.map(([code, n]) => `<code>${esc(code)}</code> ${esc(n)}`).join(', ')}</span>`
      : '<span class="stat failures">no failures</span>',
    ...(g.decisions?.items
      ? [
          `<span class="stat decisions"><b>${esc(g.decisions.items)}</b> wait${g.decisions.items === 1 ? 's' : ''} for a decision: ${g.decisions.unpriced ? 'at least ' : ''}${esc(g.decisions.credits)} credits once approved, nothing paid yet</span>`,
        ]
      : []),
    `<span class="stat">run time <b>${esc(formatDuration(g.run.seconds))}</b>${g.run.sessions > 1 ? ` over ${esc(g.run.sessions)} sessions` : ''}</span>`,
    ...(g.tags ?? []).map(
      (t) =>
        `<span class="stat tag">tag <b>${esc(t.tag)}</b>: ${esc(t.items)} item${t.items === 1 ? '' : 's'}, ${esc(t.net)} credit${t.net === 1 ? '' : 's'} net</span>`,
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
<style>${g.code.gallery.css}${g.plots ? g.code.uplot.css : ''}</style>
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
${g.plots ? plotsSection(g.plots, g.code.uplot.js) : ''}<noscript><p class="noscript">The gallery draws its cards with JavaScript; results.csv lists every item.</p></noscript>
<main id="grid"></main>
<p id="none" hidden>No item matches these filters.</p>
<p id="more-wrap" hidden><button id="more" type="button">show more</button></p>
<div id="lightbox" role="dialog" aria-modal="true" aria-label="output" hidden>
<div class="lb-bar"><button type="button" id="lb-prev" aria-label="previous">←</button><span id="lb-pos"></span><button type="button" id="lb-next" aria-label="next">→</button><button type="button" id="lb-close" aria-label="close">✕ Esc</button></div>
<div class="lb-body"><div id="lb-media"></div><dl id="lb-meta"></dl></div>
</div>
<script type="application/json" id="items">[`;
}

/** The run's plots, drawn by the page's script with uPlot (which may refuse to start: the page goes on without it). */
function plotsSection(series: RunSeries, uplot: string): string {
  return `<section id="plots" aria-label="plots"></section>
<script type="application/json" id="plot-series">${asJsonInHtml(series)}</script>
<script>try {
${inScript(uplot)}
} catch (error) { console.warn('the plots could not be drawn:', error.message); }</script>
`;
}

/** One card's data, as it sits in the page's JSON array. */
export function galleryCard(r: ResultRow, poster: string | undefined): string {
  return `\n${asJsonInHtml(cardData(r, poster))}`;
}

export const galleryTail = (code: Pick<Pages, 'gallery'>) => `\n]</script>
<script>${inScript(code.gallery.js)}</script>
</body>
</html>
`;

function cardData(r: ResultRow, poster: string | undefined): GalleryCard {
  return {
    id: r.id,
    state: r.state,
    type: r.type,
    model: r.model,
    prompt: r.prompt,
    files: r.files.map((f) => relativeUrl(f.path)),
    ...copiesOf(r),
    charged: r.creditsCharged,
    refunded: r.creditsRefunded,
    code: r.errorCode,
    message: r.errorMessage,
    // Why it waits, or why a decision skipped it: no failure. A skip for a failed input stays an error.
    ...(r.reason && (r.state === 'waiting' || r.errorCode === 'GATE_REJECTED') ? { reason: r.reason } : {}),
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

/** The web copies of a row's outputs, as the card links them: `webp 96×96`. */
function copiesOf(r: ResultRow): Pick<GalleryCard, 'copies'> {
  const copies = r.files.flatMap((f) =>
    (f.derivatives ?? []).map((d) => ({ href: relativeUrl(d.path), label: `${d.format} ${d.width}×${d.height}` })),
  );
  return copies.length ? { copies } : {};
}
