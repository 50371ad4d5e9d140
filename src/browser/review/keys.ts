import { byId } from '../dom.js';
import { decide, openNote, undo } from './decisions.js';
import { moveTo, reload, render, showCounts } from './grid.js';
import { closeLightbox, openLightbox } from './lightbox.js';
import { app, isShown } from './state.js';

/** Arrows or hjkl move (a row at a time in the grid, one card in the lightbox). */
function stepOf(key: string, inLightbox: boolean): number | undefined {
  const down = inLightbox ? 1 : app.cols;
  const steps: Record<string, number> = { ArrowRight: 1, l: 1, ArrowLeft: -1, h: -1, ArrowDown: down, j: down };
  steps.ArrowUp = -down;
  steps.k = -down;
  return steps[key];
}

/** The keys that act on the cards: review first, the mouse second. */
function onKey(e: KeyboardEvent): void {
  const target = e.target as HTMLElement;
  if (target === byId('f-search') || target.tagName === 'SELECT') {
    if (e.key === 'Escape' || e.key === 'Enter') {
      e.preventDefault();
      app.scroller.focus();
    }
    return;
  }
  if (isShown('note')) return;
  const k = e.key;
  const lb = isShown('lightbox');
  if (k === '?') byId('help').hidden = isShown('help');
  else if (k === 'Escape') closeTopmost(lb);
  else if ((e.ctrlKey || e.metaKey) && k === 'z') {
    e.preventDefault();
    void undo();
  } else if (!(e.ctrlKey || e.metaKey || e.altKey)) {
    const step = stepOf(k, lb);
    if (step) {
      e.preventDefault();
      moveTo(app.focus + step, e.shiftKey && !lb);
    } else act(k, e, lb);
  }
}

/** Esc closes the help, else the lightbox, else drops the selection. */
function closeTopmost(inLightbox: boolean): void {
  if (isShown('help')) byId('help').hidden = true;
  else if (inLightbox) closeLightbox();
  else {
    app.anchor = -1;
    render();
    showCounts();
  }
}

function act(k: string, e: KeyboardEvent, lb: boolean): void {
  if (k === 'a') decide('approved');
  else if (k === 'r' || k === 'x') decide('rejected');
  else if (k === 'u') decide(null, null);
  else if (k === 'z') void undo();
  else if (k === 'n') {
    e.preventDefault();
    openNote();
  } else if (k === 'c') {
    app.comparing = !(lb && app.comparing);
    openLightbox(app.focus);
  } else if (k === 'Enter' || k === ' ') {
    e.preventDefault();
    if (lb) closeLightbox();
    else {
      app.comparing = false;
      openLightbox(app.focus);
    }
  } else if (k === '/') {
    e.preventDefault();
    byId('f-search').focus();
  } else if (k === 'Home') moveTo(0, e.shiftKey);
  else if (k === 'End') moveTo(app.total - 1, e.shiftKey);
}

function onFilter(): void {
  app.filter = {
    review: byId<HTMLSelectElement>('f-review').value,
    state: byId<HTMLSelectElement>('f-state').value,
    model: byId<HTMLSelectElement>('f-model').value,
    tag: byId<HTMLSelectElement>('f-tag').value,
    q: byId<HTMLInputElement>('f-search').value.trim(),
  };
  void reload(false);
}

/** Keys, clicks on the cards, and the filters. */
export function listenToInput(): void {
  document.addEventListener('keydown', onKey);
  const cardOf = (e: MouseEvent) => (e.target as HTMLElement).closest<HTMLElement>('.card');
  app.space.addEventListener('click', (e) => {
    const node = cardOf(e);
    if (!node) return;
    moveTo(Number(node.dataset.index), e.shiftKey);
    app.scroller.focus();
  });
  app.space.addEventListener('dblclick', (e) => {
    const node = cardOf(e);
    if (!node) return;
    app.comparing = false;
    openLightbox(Number(node.dataset.index));
  });
  byId('help-button').addEventListener('click', () => {
    byId('help').hidden = isShown('help');
  });
  for (const id of ['f-review', 'f-state', 'f-model', 'f-tag']) byId(id).addEventListener('change', onFilter);
  let searchTimer: ReturnType<typeof setTimeout> | undefined;
  const search = byId<HTMLInputElement>('f-search');
  search.addEventListener('input', () => {
    clearTimeout(searchTimer);
    // Words of 3 characters or more are answered from the index at once; a shorter one means a scan: typing may go on.
    const words = search.value.trim().split(/\s+/).filter(Boolean);
    if (words.every((w) => [...w].length >= 3)) onFilter();
    else searchTimer = setTimeout(onFilter, 60);
  });
  byId('filters').addEventListener('submit', (e) => e.preventDefault());
}
