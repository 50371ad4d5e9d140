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
void reload(false).then(() => {
  app.scroller.focus();
  // The live feed opens with the plots' data, which the server reads from every attempt: after the first screen.
  void firstScreenShown().then(connect);
});

/** The first screen's images decoded (or failed), or a second gone by. */
function firstScreenShown(): Promise<unknown> {
  const images = Array.from(app.space.querySelectorAll('img'), (img) => img.decode().catch(() => {}));
  return Promise.race([Promise.all(images), new Promise((done) => setTimeout(done, 1_000))]);
}
