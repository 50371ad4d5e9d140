import { formatDuration } from '../estimate/index.js';
import type { ItemState } from '../store/index.js';
import { relativeUrl } from './posters.js';
import type { ResultRow } from './results.js';

export interface GalleryInput {
  title: string;
  generatedAt: number;
  rows: readonly ResultRow[];
  /** Item id → poster URL, for videos. */
  posters: ReadonlyMap<string, string>;
  credits: { charged: number; refunded: number; net: number };
  failures: Readonly<Record<string, number>>;
  run: { seconds: number; sessions: number };
}

/** The states the filters always offer; others appear when some item is in them. */
const FILTER_STATES: readonly ItemState[] = ['done', 'failed', 'blocked', 'skipped'];
const ALL_STATES: readonly ItemState[] = ['done', 'failed', 'rejected', 'blocked', 'skipped', 'pending', 'submitting', 'running', 'downloading'];

const esc = (text: string | number) => String(text).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/**
 * One HTML file that shows a run's outputs: no server, no network (a CSP
 * forbids it), everything inline but the outputs, which it links relatively.
 */
export function renderGallery(g: GalleryInput): string {
  const stateCounts = new Map<ItemState, number>();
  const modelCounts = new Map<string, number>();
  for (const r of g.rows) {
    stateCounts.set(r.state, (stateCounts.get(r.state) ?? 0) + 1);
    modelCounts.set(r.model, (modelCounts.get(r.model) ?? 0) + 1);
  }
  const states = ALL_STATES.filter((s) => FILTER_STATES.includes(s) || stateCounts.has(s));
  const failures = Object.entries(g.failures);
  const summary = [
    `<span class="stat"><b>${esc(g.rows.length)}</b> items</span>`,
    ...states.filter((s) => stateCounts.has(s)).map((s) => `<span class="stat s-${s}"><b>${esc(stateCounts.get(s)!)}</b> ${s}</span>`),
    `<span class="stat"><b>${esc(g.credits.net)}</b> credits net (${esc(g.credits.charged)} charged, ${esc(g.credits.refunded)} refunded)</span>`,
    failures.length ? `<span class="stat failures">failures: ${failures.map(([code, n]) => `<code>${esc(code)}</code> ${esc(n)}`).join(', ')}</span>` : '<span class="stat failures">no failures</span>',
    `<span class="stat">run time <b>${esc(formatDuration(g.run.seconds))}</b>${g.run.sessions > 1 ? ` over ${esc(g.run.sessions)} sessions` : ''}</span>`,
  ].join('');
  const stateFilters = states
    .map((s) => `<label class="chip s-${s}"><input type="checkbox" name="state" value="${s}" checked> ${s} <span class="n">${stateCounts.get(s) ?? 0}</span></label>`)
    .join('');
  const modelOptions = [...modelCounts].map(([m, n]) => `<option value="${esc(m)}">${esc(m)} (${n})</option>`).join('');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src 'self' data:; media-src 'self'; style-src 'unsafe-inline'; script-src 'unsafe-inline'">
<title>${esc(g.title)} · genbatch results</title>
<style>${STYLE}</style>
</head>
<body>
<header>
<h1>${esc(g.title)}</h1>
<p class="generated">generated ${esc(new Date(g.generatedAt).toISOString())} by genbatch · data in results.jsonl and results.csv</p>
<section class="summary" aria-label="summary">${summary}</section>
<form class="filters" aria-label="filters">
<fieldset><legend>state</legend>${stateFilters}</fieldset>
<label>model <select id="model"><option value="">all models</option>${modelOptions}</select></label>
<output id="shown">${g.rows.length} of ${g.rows.length} shown</output>
</form>
</header>
<main id="grid">
${g.rows.map((r) => card(r, g.posters.get(r.id))).join('\n')}
</main>
<p id="none" hidden>No item matches these filters.</p>
<script>${SCRIPT}</script>
</body>
</html>
`;
}

function card(r: ResultRow, poster: string | undefined): string {
  const credits = r.creditsRefunded ? `${r.creditsCharged} credits, ${r.creditsRefunded} refunded` : `${r.creditsCharged} credits`;
  const error = r.errorCode ? `<p class="error"><code>${esc(r.errorCode)}</code> ${esc(r.errorMessage ?? '')}</p>` : '';
  const more = r.files.length > 1 ? `<p class="files">${r.files.map((f, i) => `<a href="${esc(relativeUrl(f.path))}">${i + 1}</a>`).join(' ')}</p>` : '';
  return `<article class="card" data-state="${r.state}" data-model="${esc(r.model)}" data-id="${esc(r.id)}">
<div class="media">${media(r, poster)}</div>
<div class="meta">
<h2><span class="id">${esc(r.id)}</span> <span class="badge s-${r.state}">${r.state}</span></h2>
<p class="prompt">${esc(r.prompt)}</p>
<p class="facts"><span class="model">${esc(r.model)}</span> · <span class="credits">${esc(credits)}</span></p>
${error}${more}</div>
</article>`;
}

function media(r: ResultRow, poster: string | undefined): string {
  const first = r.files[0];
  if (!first) return `<div class="empty s-${r.state}">${r.state === 'done' ? 'no output' : r.state}</div>`;
  const src = esc(relativeUrl(first.path));
  if (r.type === 'video') return `<video controls playsinline preload="none" src="${src}"${poster ? ` poster="${esc(poster)}"` : ''}></video>`;
  return `<a href="${src}"><img src="${src}" alt="${esc(r.prompt)}" loading="lazy" decoding="async"></a>`;
}

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
.card { background: var(--card); border: 1px solid var(--line); border-radius: 8px; overflow: hidden; display: flex; flex-direction: column; content-visibility: auto; contain-intrinsic-size: auto 380px; }
.card[hidden], #none[hidden] { display: none; }
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
.error { margin: 6px 0 0; padding: 6px 8px; border-radius: 4px; background: #ffe3e3; color: #8a041a; word-break: break-word; }
#none { text-align: center; color: var(--muted); }
`;

// Filters show and hide cards; without script every card shows.
const SCRIPT = `
const cards = Array.from(document.querySelectorAll('.card'));
const model = document.getElementById('model');
function apply() {
  const states = new Set(Array.from(document.querySelectorAll('input[name=state]:checked'), (i) => i.value));
  let shown = 0;
  for (const card of cards) {
    const visible = states.has(card.dataset.state) && (!model.value || card.dataset.model === model.value);
    card.hidden = !visible;
    if (visible) shown++;
  }
  document.getElementById('shown').textContent = shown + ' of ' + cards.length + ' shown';
  document.getElementById('none').hidden = shown > 0;
}
document.querySelector('.filters').addEventListener('change', apply);
`;
