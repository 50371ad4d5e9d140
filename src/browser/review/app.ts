/**
 * The review app's page: a virtual grid (only the visible cards are in the
 * DOM, fetched a slice at a time), keyboard review, the lightbox and version
 * comparison, the live header and plots from server-sent events. Plain DOM,
 * no framework.
 */
import { listenToNotes } from './decisions.js';
import { grid, layout, reload, render } from './grid.js';
import { listenToInput } from './keys.js';
import { openLightbox } from './lightbox.js';
import { connect } from './live.js';
import { app, isShown } from './state.js';

grid.onMoved = (i) => {
  if (isShown('lightbox')) openLightbox(i);
};
listenToNotes();
listenToInput();
app.scroller.addEventListener('scroll', () => requestAnimationFrame(render));
window.addEventListener('resize', () => {
  layout();
  render();
});
layout();
void reload(false).then(() => app.scroller.focus());
connect();
