import type { CardsPage, ReviewCardData } from '../data.js';
import { byId, el } from '../dom.js';
import { api, app, CARD_H, CARD_W, cardImageUrl, fileUrl, fmt, GAP, SLICE } from './state.js';
import { askForThumbs, holdThumbs, showThumb } from './thumbs.js';

/**
 * The grid: a tall empty space with only the visible rows of cards in it,
 * fetched a slice at a time on demand. Moving the focus tells `onMoved`
 * (the lightbox follows it).
 */
export const grid = { onMoved: (_index: number) => {} };

function query(offset: number): string {
  // Where the screen begins in this slice: the server makes its thumbnails ahead of the page's asking.
  const screen = Math.min(SLICE - 1, Math.max(0, visibleRange()[0] - offset));
  return `/api/items?offset=${offset}&limit=${SLICE}&screen=${screen}${filterParams()}`;
}

function filterParams(): string {
  let q = '';
  for (const [k, v] of Object.entries(app.filter)) if (v) q += `&${k}=${encodeURIComponent(v)}`;
  return q;
}

/** The grid's first slice, inside the page as it was served: taken once, by the unfiltered grid's first slice. */
let served: CardsPage | undefined = servedSlice();

function servedSlice(): CardsPage | undefined {
  const text = document.getElementById('first-slice')?.textContent;
  try {
    const page = text ? (JSON.parse(text) as CardsPage | string) : undefined;
    return typeof page === 'object' && Array.isArray(page.cards) ? page : undefined;
  } catch {
    return undefined;
  }
}

async function fetchSlice(index: number): Promise<void> {
  const gen = app.generation;
  const issued = app.editSeq;
  const unfiltered = !Object.values(app.filter).some(Boolean);
  const first = index === 0 && unfiltered ? served : undefined;
  served = undefined;
  // No thumbnail is asked for while a question is out: its answer, and the cards it brings, come first.
  const release = first ? undefined : holdThumbs();
  try {
    const page = first ?? (await api<CardsPage>(query(index * SLICE)));
    if (gen !== app.generation) return;
    const mine = new Map((app.slices.get(index) ?? []).map((c) => [c.id, c]));
    app.slices.set(
      index,
      page.cards.map((c) => (mine.has(c.id) && isNewerHere(c.id, issued) ? mine.get(c.id)! : c)),
    );
    const total = page.total ?? page.atLeast ?? page.cards.length;
    if (total !== app.total || app.counting !== (page.total === null)) {
      app.total = total;
      app.counting = page.total === null;
      layout();
    }
    followFocus();
    render();
    if (page.total === null) void countAfter(gen);
  } finally {
    release?.();
  }
}

/**
 * The focus stays on its card when the cards shift under it: a decided card that left the filter (approved, in
 * decide or unreviewed) gives its place to the next, and the focus is on that one, where the person sees it.
 */
function followFocus(): void {
  const id = app.focusId;
  if (id === undefined || cardAt(app.focus)?.id === id) return;
  for (const [k, slice] of app.slices) {
    const at = slice.findIndex((c) => c.id === id);
    if (at < 0) continue;
    const moved = k * SLICE + at;
    if (app.anchor >= 0) app.anchor = Math.max(0, app.anchor + moved - app.focus);
    app.focus = moved;
    return;
  }
  // Not among the cards loaded (it left the view, or its slice is on its way): the focus stays where it was.
  if (app.focus >= app.total) app.focus = Math.max(0, app.total - 1);
}

/** The count of a search whose first cards came before it: the grid grows to it once it is in. */
async function countAfter(gen: number): Promise<void> {
  const answer = await api<{ total: number }>(`/api/count?${filterParams().slice(1)}`).catch(() => undefined);
  if (!answer || gen !== app.generation) return;
  app.total = answer.total;
  app.counting = false;
  layout();
  render();
}

/**
 * The card on the page is newer than a slice issued at `issued`: edited since, or with a decision the server has
 * not answered yet (the slice may have been read before the decision was saved, however late it was issued).
 */
function isNewerHere(id: string, issued: number): boolean {
  return (app.edited.get(id) ?? 0) > issued || (app.unconfirmed.get(id) ?? 0) > 0;
}

function loadSlice(index: number): Promise<void> {
  if (app.slices.has(index)) return Promise.resolve();
  return track(index);
}

function track(index: number): Promise<void> {
  const known = app.pending.get(index);
  if (known) return known;
  const p = fetchSlice(index)
    .catch(() => {})
    .then(() => {
      app.pending.delete(index);
    });
  app.pending.set(index, p);
  return p;
}

export function cardAt(i: number): ReviewCardData | undefined {
  return app.slices.get(Math.floor(i / SLICE))?.[i % SLICE];
}

export async function reload(keepFocus: boolean): Promise<void> {
  app.generation++;
  app.slices.clear();
  app.pending.clear();
  if (!keepFocus) {
    app.focus = 0;
    app.focusId = undefined;
    app.anchor = -1;
    app.scroller.scrollTop = 0;
  }
  await loadSlice(0);
  showCounts();
}

/** Fetches again the slices on screen (the live view: new outputs, other states); what is shown stays until they arrive. */
export function refreshVisible(): void {
  const [from, to] = visibleRange();
  const first = Math.floor(from / SLICE);
  const last = Math.floor(Math.max(from, to - 1) / SLICE);
  for (let k = first; k <= last; k++) void track(k);
}

export function layout(): void {
  app.cols = Math.max(1, Math.floor((app.scroller.clientWidth - GAP) / (CARD_W + GAP)));
  app.space.style.height = `${Math.ceil(app.total / app.cols) * (CARD_H + GAP) + GAP}px`;
  showCounts();
}

function visibleRange(): [number, number] {
  const rowH = CARD_H + GAP;
  const firstRow = Math.max(0, Math.floor(app.scroller.scrollTop / rowH) - 1);
  const lastRow = Math.ceil((app.scroller.scrollTop + app.scroller.clientHeight) / rowH) + 1;
  return [firstRow * app.cols, Math.min(app.total, lastRow * app.cols)];
}

export function render(): void {
  const [from, to] = visibleRange();
  const nodes: HTMLElement[] = [];
  for (let i = from; i < to; i++) {
    const card = cardAt(i);
    if (!card) {
      void loadSlice(Math.floor(i / SLICE));
      continue;
    }
    nodes.push(cardNode(card, i));
  }
  app.space.replaceChildren(...nodes);
  askForThumbs();
}

export function decisionOf(card: ReviewCardData): string | null {
  return card.decision ?? (card.version ? 'unreviewed' : null);
}

function isSelected(i: number): boolean {
  if (app.anchor < 0) return false;
  return i >= Math.min(app.anchor, app.focus) && i <= Math.max(app.anchor, app.focus);
}

function media(card: ReviewCardData): HTMLElement {
  if (!card.file) return el('div', { className: 'empty', text: card.state });
  if (card.type === 'video') return el('video', { src: fileUrl(card.file), preload: 'metadata', muted: '' });
  // Only the cards on screen are in the DOM: each image is wanted now, at the card's size.
  const img = el('img', { alt: card.prompt, decoding: 'async', fetchpriority: 'high' });
  const url = cardImageUrl(card);
  if (!url.startsWith('data:')) return showThumb(img, url);
  img.src = url;
  return img;
}

function cardNode(card: ReviewCardData, i: number): HTMLElement {
  const d = decisionOf(card);
  const classes = `card${i === app.focus ? ' focus' : ''}${isSelected(i) ? ' selected' : ''}${card.decision ? ` d-${card.decision}-card` : ''}`;
  const node = el(
    'article',
    { className: classes, 'data-index': String(i), 'data-id': card.id, 'data-decision': d ?? '', title: card.prompt },
    el('div', { className: 'media' }, media(card)),
    el(
      'div',
      { className: 'meta' },
      el('span', { className: 'id', text: card.id }),
      card.values ? el('span', { className: 'values', text: valuesText(card.values) }) : null,
      el('span', { className: 'badge', text: card.state }),
      card.unlocks
        ? el('span', {
            className: 'badge unlocks',
            text: `unlocks ${unlocksText(card.unlocks)}${upToText(card.unlocks)}`,
            title:
              'approving it lets these items be sent now; up to: what the whole chain behind it may spend with the approvals after this one',
          })
        : null,
      d ? el('span', { className: `badge d-${d}`, text: d }) : null,
      (card.version ?? 0) > 1 ? el('span', { className: 'badge', text: `v${card.version}` }) : null,
      card.note ? el('span', { className: 'note', text: card.note }) : null,
    ),
  );
  const row = Math.floor(i / app.cols);
  const col = i % app.cols;
  Object.assign(node.style, {
    left: `${GAP + col * (CARD_W + GAP)}px`,
    top: `${GAP + row * (CARD_H + GAP)}px`,
    width: `${CARD_W}px`,
    height: `${CARD_H}px`,
  });
  return node;
}

export function showCounts(): void {
  byId('shown').textContent = `${fmt(app.total)}${app.counting ? '+' : ''} shown`;
  const n = app.anchor < 0 ? 0 : Math.abs(app.focus - app.anchor) + 1;
  // What a bulk approve would let go, said before it is made.
  const unlocks = n > 1 ? selectedUnlocks() : { items: 0, credits: 0 };
  byId('selection').textContent =
    n > 1 ? `${n} selected${unlocks.items ? ` · approving unlocks ${unlocksText(unlocks)}` : ''}` : '';
}

/** What approving the selected cards would unlock, of the cards loaded (a selection is of cards on screen or near). */
function selectedUnlocks(): { items: number; credits: number } {
  const total = { items: 0, credits: 0 };
  for (const card of targets()) {
    total.items += card.unlocks?.items ?? 0;
    total.credits += card.unlocks?.credits ?? 0;
  }
  return total;
}

const unlocksText = (u: { items: number; credits: number }) =>
  `${fmt(u.items)} item${u.items === 1 ? '' : 's'}, ${fmt(u.credits)} credit${u.credits === 1 ? '' : 's'}`;

/** The chain's total, when it holds more than what approving unlocks now. */
const upToText = (u: { credits: number; upTo?: { items: number; credits: number } }) =>
  u.upTo && u.upTo.credits > u.credits ? `; up to ${fmt(u.upTo.credits)} credit${u.upTo.credits === 1 ? '' : 's'}` : '';

/** The row's values as a line: column: value, in their order. */
const valuesText = (values: Record<string, string>) =>
  Object.entries(values)
    .map(([k, v]) => `${k}: ${v}`)
    .join(' · ');

/** Focus on card `i` (a range from the anchor with `extend`), scrolled into view. */
export function moveTo(index: number, extend: boolean): void {
  if (app.total === 0) return;
  const i = Math.max(0, Math.min(app.total - 1, index));
  if (extend) {
    if (app.anchor < 0) app.anchor = app.focus;
  } else app.anchor = -1;
  app.focus = i;
  app.focusId = cardAt(i)?.id;
  const rowH = CARD_H + GAP;
  const top = Math.floor(i / app.cols) * rowH;
  const { scroller } = app;
  if (top < scroller.scrollTop) scroller.scrollTop = top;
  else if (top + rowH > scroller.scrollTop + scroller.clientHeight)
    scroller.scrollTop = top + rowH - scroller.clientHeight + GAP;
  render();
  showCounts();
  grid.onMoved(i);
}

/** The selected cards (or the focused one) that have an output to decide on. */
export function targets(): ReviewCardData[] {
  const from = app.anchor < 0 ? app.focus : Math.min(app.anchor, app.focus);
  const to = app.anchor < 0 ? app.focus : Math.max(app.anchor, app.focus);
  const list: ReviewCardData[] = [];
  for (let i = from; i <= to; i++) {
    const c = cardAt(i);
    if (c?.version) list.push(c);
  }
  return list;
}
