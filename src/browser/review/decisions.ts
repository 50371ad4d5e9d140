import type { Decision, ReviewCardData } from '../data.js';
import { byId } from '../dom.js';
import { cardAt, moveTo, render, targets } from './grid.js';
import { openLightbox } from './lightbox.js';
import { drawSummary } from './live.js';
import { app, isShown, post, toast } from './state.js';

/** What a card had before a decision: what undo gives back. */
interface Before {
  itemId: string;
  version: number | null;
  decision: Decision | null;
  note: string | null;
}

const undoStack: Before[][] = [];

/** Saved at once; the focus moves on before the answer, so keys pressed meanwhile act on the next card. */
export function decide(decision: Decision | null, note?: string | null): void {
  const list = targets();
  if (list.length === 0) {
    toast('nothing to review here: no output on disk yet');
    return;
  }
  const items = list.map((c) => ({ itemId: c.id, version: c.version }));
  // Without a note given, the server keeps each item's own.
  const body: Record<string, unknown> =
    items.length === 1 ? { itemId: items[0]!.itemId, version: items[0]!.version, decision } : { items, decision };
  if (note !== undefined) body.note = note;
  undoStack.push(list.map((c) => ({ itemId: c.id, version: c.version, decision: c.decision, note: c.note })));
  app.editSeq++;
  for (const c of list) {
    app.edited.set(c.id, app.editSeq);
    c.decision = decision;
    if (note !== undefined) c.note = note;
  }
  render();
  // The focus goes to the card after the decided one (or the range): the one that takes its place where the
  // decided card leaves the filter, followed by its id as the view shifts (see followFocus).
  if (decision && !isShown('lightbox') && !isShown('note')) moveTo(Math.max(app.focus, app.anchor) + 1, false);
  void send(body);
}

/**
 * Decisions go to the server one after another: each answer carries the cards as saved, and two in flight at once
 * could be answered out of order on their two connections (an undo's answer, then the older decision's, would put
 * the undone decision back on the page).
 */
let sending: Promise<void> = Promise.resolve();

function send(body: Record<string, unknown>): Promise<void> {
  const ids = 'items' in body ? (body.items as { itemId: string }[]).map((i) => i.itemId) : [body.itemId as string];
  for (const id of ids) app.unconfirmed.set(id, (app.unconfirmed.get(id) ?? 0) + 1);
  sending = sending
    .then(() => sendNow(body))
    .finally(() => {
      for (const id of ids) {
        const left = (app.unconfirmed.get(id) ?? 1) - 1;
        if (left > 0) app.unconfirmed.set(id, left);
        else app.unconfirmed.delete(id);
      }
    });
  return sending;
}

async function sendNow(body: Record<string, unknown>): Promise<void> {
  try {
    const r = await post(body);
    if (r.status !== 200) toast(r.data.error ?? `not saved for ${(r.data.refused ?? []).join(', ')}`);
    if (r.data.cards) applyCards(r.data.cards);
    if (r.data.review && app.summary) {
      app.summary.review = r.data.review;
      drawSummary();
    }
  } catch (e) {
    toast(`not saved: ${(e as Error).message}`);
  }
}

/** The cards as the server saved them, put in every slice that holds them. */
function applyCards(cards: ReviewCardData[]): void {
  app.editSeq++;
  for (const c of cards) app.edited.set(c.id, app.editSeq);
  const byIdMap = new Map(cards.map((c) => [c.id, c]));
  for (const slice of app.slices.values()) for (const [k, c] of slice.entries()) slice[k] = byIdMap.get(c.id) ?? c;
  render();
  if (isShown('lightbox')) openLightbox(app.lightboxAt);
}

export async function undo(): Promise<void> {
  const last = undoStack.pop();
  if (!last) {
    toast('nothing to undo');
    return;
  }
  for (const p of last) await send({ itemId: p.itemId, version: p.version, decision: p.decision, note: p.note });
  toast('undone');
}

export function openNote(): void {
  const c = cardAt(app.focus);
  if (!c?.version) {
    toast('nothing to note here: no output on disk yet');
    return;
  }
  byId('note-label').textContent =
    `note on ${c.id}${c.decision ? ` (${c.decision})` : ' (saved as rejected: a note says why)'}`;
  const text = byId<HTMLTextAreaElement>('note-text');
  text.value = c.note ?? '';
  byId('note').hidden = false;
  text.focus();
}

/** Enter saves the note (on the focused card alone), Esc cancels; keys typed there reach nothing else. */
export function listenToNotes(): void {
  const text = byId<HTMLTextAreaElement>('note-text');
  text.addEventListener('keydown', (e) => {
    e.stopPropagation();
    if (e.key === 'Escape') {
      byId('note').hidden = true;
      app.scroller.focus();
    } else if (e.key === 'Enter' && !e.shiftKey) {
      e.preventDefault();
      const c = cardAt(app.focus);
      byId('note').hidden = true;
      app.scroller.focus();
      const keepAnchor = app.anchor;
      app.anchor = -1;
      decide(c?.decision ?? 'rejected', text.value.trim() || null);
      app.anchor = keepAnchor;
    }
  });
}
