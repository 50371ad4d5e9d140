/**
 * The static gallery's page: the cards that match the filters, drawn a page
 * at a time from the items' JSON (every value goes in as text, never as
 * markup), a lightbox, and the run's plots when the page carries them.
 */
import type { GalleryCard, RunSeries } from '../data.js';
import { byId, el, jsonIn } from '../dom.js';
import { RunPlots } from '../plots.js';
import { card, facts } from './cards.js';

const PAGE = 200;
type Item = GalleryCard & { hay: string };
const items = jsonIn<Item[]>('items');
const grid = byId('grid');
const model = byId<HTMLSelectElement>('model');
const more = byId<HTMLButtonElement>('more');
const search = byId<HTMLInputElement>('search');
const density = byId<HTMLSelectElement>('density');
const groupBy = byId<HTMLSelectElement>('group');
const lightbox = byId('lightbox');
const filters = document.querySelector<HTMLFormElement>('.filters')!;
let matching: Item[] = items;
let drawn = 0;
let shownAt = -1;
let groupSizes = new Map<string, number>();
// What a search looks in, lower-cased once: a 100,000-item catalog filters as you type.
for (const item of items) item.hay = `${item.id}\n${item.prompt}`.toLowerCase();

const keyOf = (item: Item) =>
  groupBy.value === 'prompt'
    ? item.prompt
    : groupBy.value === 'model'
      ? item.model
      : (item.values[groupBy.value] ?? '');

// The lightbox: the full-size output and its facts; arrows walk the items that match the filters, Esc closes.
function openAt(index: number): void {
  if (index < 0 || index >= matching.length) return;
  shownAt = index;
  const item = matching[index]!;
  const src = item.files[0];
  const full = !src
    ? el('p', { text: item.state === 'done' ? 'no output' : item.state })
    : item.type === 'video'
      ? el('video', { controls: '', src, poster: item.poster })
      : el('img', { src, alt: item.prompt });
  byId('lb-media').replaceChildren(full);
  byId('lb-meta').replaceChildren(
    ...facts(item).flatMap(([k, v]) => [
      el('dt', { text: k }),
      el('dd', { class: `lb-${k.replace(' ', '-')}`, text: v }),
    ]),
  );
  byId('lb-pos').textContent = `${index + 1} of ${matching.length}`;
  lightbox.hidden = false;
}

function closeLightbox(): void {
  lightbox.hidden = true;
  byId('lb-media').replaceChildren();
}

function drawMore(): void {
  const next = matching.slice(drawn, drawn + PAGE);
  const nodes: HTMLElement[] = [];
  next.forEach((item, i) => {
    // A heading wherever the group changes: the items were put in group order, each group in manifest order.
    const before = drawn + i > 0 ? matching[drawn + i - 1] : undefined;
    if (groupBy.value && (!before || keyOf(before) !== keyOf(item))) {
      const key = keyOf(item);
      nodes.push(
        el(
          'h3',
          { class: 'group' },
          `${groupBy.value}: `,
          el('b', { text: key || '(none)' }),
          ` · ${groupSizes.get(key)}`,
        ),
      );
    }
    nodes.push(card(item));
  });
  grid.append(...nodes);
  drawn += next.length;
  byId('more-wrap').hidden = drawn >= matching.length;
}

/** Groups in the order their first item comes in the manifest; a stable sort keeps manifest order inside each. */
function grouped(list: Item[]): Item[] {
  const firstAt = new Map<string, number>();
  groupSizes = new Map();
  list.forEach((item, i) => {
    const k = keyOf(item);
    if (!firstAt.has(k)) firstAt.set(k, i);
    groupSizes.set(k, (groupSizes.get(k) ?? 0) + 1);
  });
  return list
    .map((item, i) => [firstAt.get(keyOf(item))!, i, item] as const)
    .sort((a, b) => a[0] - b[0] || a[1] - b[1])
    .map((t) => t[2]);
}

function apply(): void {
  const states = new Set(
    Array.from(document.querySelectorAll<HTMLInputElement>('input[name=state]:checked'), (i) => i.value),
  );
  const words = search.value.toLowerCase().split(/\s+/).filter(Boolean);
  matching = items.filter(
    (item) =>
      states.has(item.state) &&
      (!model.value || item.model === model.value) &&
      words.every((w) => item.hay.includes(w)),
  );
  if (groupBy.value) matching = grouped(matching);
  grid.replaceChildren();
  drawn = 0;
  drawMore();
  byId('shown').textContent = `${matching.length} of ${items.length} shown`;
  byId('none').hidden = matching.length > 0;
}

grid.addEventListener('click', (event) => {
  const opener = (event.target as HTMLElement).closest('.open, h2 .id');
  if (!opener) return;
  event.preventDefault();
  const id = opener.closest<HTMLElement>('.card')?.dataset.id;
  openAt(matching.findIndex((item) => item.id === id));
});
byId('lb-prev').addEventListener('click', () => openAt(shownAt - 1));
byId('lb-next').addEventListener('click', () => openAt(shownAt + 1));
byId('lb-close').addEventListener('click', closeLightbox);
document.addEventListener('keydown', (event) => {
  if (lightbox.hidden) return;
  if (event.key === 'Escape') closeLightbox();
  else if (event.key === 'ArrowRight') openAt(shownAt + 1);
  else if (event.key === 'ArrowLeft') openAt(shownAt - 1);
});
filters.addEventListener('change', (event) => {
  if (event.target === density) grid.className = density.value === 'comfortable' ? '' : density.value;
  else apply();
});
search.addEventListener('input', apply);
// Enter in the search box must not submit the form (a reload).
filters.addEventListener('submit', (event) => event.preventDefault());
more.addEventListener('click', drawMore);
// Scrolling near the end draws the next page.
new IntersectionObserver((seen) => seen.some((e) => e.isIntersecting) && drawMore(), { rootMargin: '800px' }).observe(
  more,
);
const plots = document.getElementById('plots');
if (plots) new RunPlots().draw(plots, jsonIn<RunSeries>('plot-series'));
apply();
