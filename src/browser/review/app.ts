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
import { thumbPlaces } from './thumbs.js';
import { byId } from '../dom.js';

thumbPlaces(app.space, byId('newest-strip'));
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

/** The first screen's images decoded (or failed), those still waiting their turn too, or a second gone by. */
function firstScreenShown(): Promise<void> {
  const until = performance.now() + 1_000;
  return new Promise((done) => {
    const look = () => {
      const images = Array.from(app.space.querySelectorAll('img'));
      if (performance.now() >= until) done();
      else if (images.some((img) => img.dataset.thumb)) setTimeout(look, 50);
      else {
        const decoded = Promise.all(images.map((img) => img.decode().catch(() => {})));
        void Promise.race([decoded, new Promise((late) => setTimeout(late, until - performance.now()))]).then(() =>
          done(),
        );
      }
    };
    look();
  });
}
