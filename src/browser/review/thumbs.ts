/**
 * The thumbnails the page shows, asked for at most three at a time. The browser keeps six connections to the
 * server, and the live feed holds one; on a first open, every thumbnail waits for the server to make it, and
 * twenty-five of them held all six, so a filter's question waited 400 ms behind them. Two stay free for the
 * page's questions. Only what is on screen is asked for, the grid's before the newest strip's; what scrolled
 * away is given up.
 */
const AT_ONCE = 3;

/** Those in the browser's memory: an image shown with one is drawn at once. */
const loaded = new Set<string>();
/** More than this and the list starts over: one forgotten is asked for again, and the browser's cache answers. */
const LOADED_MAX = 5_000;
/** Those asked for, each by an image of its own (the cards' come and go with every frame drawn). */
const loading = new Map<string, HTMLImageElement>();

/** The places whose thumbnails are asked for, the first first. */
const places: HTMLElement[] = [];

export function thumbPlaces(...inOrder: HTMLElement[]): void {
  places.splice(0, places.length, ...inOrder);
}

/** Shows `url` in `img`: at once if the browser holds it, else once its turn came and it loaded. */
export function showThumb(img: HTMLImageElement, url: string): HTMLImageElement {
  if (loaded.has(url)) img.src = url;
  else img.dataset.thumb = url;
  return img;
}

/** Questions out: no thumbnail is asked for meanwhile (those on their way go on). */
let held = 0;

/** A question held thumbnails this long at most: an answer that never comes holds nothing for good. */
const HOLD_MAX_MS = 2_000;

/** Holds new asks until the returned release is called (a question out, whose answer should not wait). */
export function holdThumbs(): () => void {
  held++;
  let released = false;
  const release = () => {
    if (released) return;
    released = true;
    clearTimeout(timer);
    held--;
    askForThumbs();
  };
  const timer = setTimeout(release, HOLD_MAX_MS);
  return release;
}

/** After a place was drawn: gives up what is no longer shown, and asks for what is, in order. */
export function askForThumbs(): void {
  const shown = places.flatMap((place) =>
    Array.from(place.querySelectorAll<HTMLImageElement>('img[data-thumb]'), (img) => img.dataset.thumb!),
  );
  const wanted = new Set(shown);
  for (const [url, img] of loading)
    if (!wanted.has(url)) {
      loading.delete(url);
      // A new source ends the request for the old.
      img.removeAttribute('src');
    }
  for (const url of wanted) {
    if (held > 0 || loading.size >= AT_ONCE) break;
    if (!loading.has(url)) ask(url);
  }
}

function ask(url: string): void {
  const img = new Image();
  loading.set(url, img);
  const done = (ok: boolean) => {
    if (loading.get(url) !== img) return;
    loading.delete(url);
    if (ok) {
      if (loaded.size >= LOADED_MAX) loaded.clear();
      loaded.add(url);
    }
    // A thumbnail that failed is left to the card's own image to try (and to say it failed).
    for (const place of places)
      for (const shown of place.querySelectorAll<HTMLImageElement>('img[data-thumb]'))
        if (shown.dataset.thumb === url) {
          delete shown.dataset.thumb;
          shown.src = url;
        }
    askForThumbs();
  };
  img.addEventListener('load', () => done(true), { once: true });
  img.addEventListener('error', () => done(false), { once: true });
  img.src = url;
}
