import type { DecisionAnswer, ReviewCardData, ReviewSummaryData } from '../data.js';
import { byId } from '../dom.js';

/** The grid's geometry: cards of a fixed size, fetched in slices. */
export { SLICE } from '../data.js';
export const CARD_W = 210;
export const CARD_H = 250;
export const GAP = 10;

/** The grid's filter, as the API takes it. */
export interface Filter {
  review: string;
  state: string;
  model: string;
  tag: string;
  q: string;
}

/** What the app knows and shows: one object, read and changed by every part of the page. */
export const app = {
  token: new URLSearchParams(location.search).get('token') ?? '',
  scroller: byId('scroller'),
  space: byId('space'),
  filter: { review: '', state: '', model: '', tag: '', q: '' } as Filter,
  total: 0,
  /** The total is as many as were seen to match, and the count is on its way. */
  counting: false,
  /** Slices of cards by index; dropped when the filter changes. */
  slices: new Map<number, ReviewCardData[]>(),
  pending: new Map<number, Promise<void>>(),
  /** Bumped when the filter changes: a slice asked for before is dropped when it arrives. */
  generation: 0,
  cols: 1,
  focus: 0,
  /**
   * The focused card's id: when the cards shift under it (a decided card leaves its filter), the focus stays on
   * this card, the one that took the decided card's place, never on one the person has not seen there.
   */
  focusId: undefined as string | undefined,
  /** Where a Shift-selection began, or -1. */
  anchor: -1,
  summary: null as ReviewSummaryData | null,
  /** The card the lightbox shows, or -1. */
  lightboxAt: -1,
  comparing: false,
  /** A card decided here after a slice was asked for keeps its local state when that slice arrives. */
  editSeq: 0,
  edited: new Map<string, number>(),
  /** Cards with a decision sent and not yet answered: no slice read meanwhile may show the server's older card. */
  unconfirmed: new Map<string, number>(),
};

export const isShown = (id: string) => !byId(id).hidden;

export function withToken(url: string): string {
  return `${url}${url.includes('?') ? '&' : '?'}token=${encodeURIComponent(app.token)}`;
}

export function fileUrl(path: string): string {
  return withToken(`/files/${path.split('/').map(encodeURIComponent).join('/')}`);
}

/** What a card shows: the output's web copy when one was made, else a thumbnail the server makes once and keeps. */
export function cardImageUrl(card: { file: string | null; copy: string | null; inlineThumb?: string }): string {
  if (card.copy) return fileUrl(card.copy);
  if (card.inlineThumb) return card.inlineThumb;
  return withToken(`/thumbs/${card.file!.split('/').map(encodeURIComponent).join('/')}`);
}

/** A read of the API, with the token in a header (writes need it there: a foreign page cannot set one). */
export async function api<T>(path: string): Promise<T> {
  const r = await fetch(withToken(path), { headers: { 'x-genbatch-token': app.token } });
  if (!r.ok) throw new Error(`${r.status} ${r.statusText}`);
  return (await r.json()) as T;
}

export async function post(body: unknown): Promise<{ status: number; data: DecisionAnswer }> {
  const r = await fetch('/api/review', {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-genbatch-token': app.token },
    body: JSON.stringify(body),
  });
  return { status: r.status, data: (await r.json()) as DecisionAnswer };
}

let toastTimer: ReturnType<typeof setTimeout> | undefined;

export function toast(text: string): void {
  const t = byId('toast');
  t.textContent = text;
  t.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => {
    t.hidden = true;
  }, 2500);
}

/** A count with thousands separators, without Intl (a browser under a POSIX locale has none it knows). */
export function fmt(n: number): string {
  let text = String(Math.round(Number(n)));
  let out = '';
  while (text.length > 3 && /^[0-9]+$/.test(text.slice(-3))) {
    out = `,${text.slice(-3)}${out}`;
    text = text.slice(0, -3);
  }
  return text + out;
}
