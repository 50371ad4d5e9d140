/**
 * The thumbnails the page shows, asked for at most two at a time. The browser keeps six connections to the
 * server, and the live feed holds one; on a first open, every thumbnail waits for the server to make it, and
 * twenty-five of them held all six, so a filter's question waited 400 ms behind them. At three, a question still
 * waited 6-12 ms for a connection while the last answer's thumbnails came in, or opened a new one; at two, the
 * bench's answers were some 20% quicker in all (one state, alternated), the first screen's thumbnails being inside
 * the page. Only what is on screen is asked for, the grid's before the newest strip's.
 */
const AT_ONCE = 2;

/** Those in the browser's memory: an image shown with one is drawn at once. */
const loaded = new Set<string>();
/** More than this and the list starts over: one forgotten is asked for again, and the browser's cache answers. */
const LOADED_MAX = 5_000;
/** Those asked for, each by an image of its own held until it loaded (the cards' come and go with every frame). */
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

/**
 * After a place was drawn: asks for what is shown, in order. What scrolled away is not asked for; one already
 * asked for is let finish (some milliseconds, kept for a later look): taking its image's source away did not free
 * its connection at once, so with three more asked for the page's next question waited 6-12 ms for one.
 */
export function askForThumbs(): void {
  const wanted = new Set(
    places.flatMap((place) =>
      Array.from(place.querySelectorAll<HTMLImageElement>('img[data-thumb]'), (img) => img.dataset.thumb!),
    ),
  );
  for (const url of wanted) {
    if (held > 0 || loading.size >= AT_ONCE) break;
    if (!loading.has(url)) ask(url);
  }
}

function ask(url: string): void {
  const img = new Image();
  loading.set(url, img);
  const done = (ok: boolean) => {
    loading.delete(url);
    if (ok) {
      if (loaded.size >= LOADED_MAX) loaded.clear();
      loaded.add(url);
    }
    // The first image waiting for it becomes the one loaded (already complete: given a source instead, it loaded
    // again from the memory cache, a task or two later); any other is given the source. A thumbnail that failed is
    // left to the card's own image to try (and to say it failed).
    let loader: HTMLImageElement | undefined = ok ? img : undefined;
    for (const place of places)
      for (const shown of place.querySelectorAll<HTMLImageElement>('img[data-thumb]'))
        if (shown.dataset.thumb === url) {
          delete shown.dataset.thumb;
          if (loader) {
            for (const { name, value } of Array.from(shown.attributes)) loader.setAttribute(name, value);
            shown.replaceWith(loader);
            loader = undefined;
          } else shown.src = url;
        }
    askForThumbs();
  };
  img.addEventListener('load', () => done(true), { once: true });
  img.addEventListener('error', () => done(false), { once: true });
  img.src = url;
}
