/**
 * uPlot formats its numbers in the browser's language, and stops at load when Intl does not know it
 * (a POSIX locale's "en-US@posix", or no language at all). Such a browser is taken as English.
 */
function intlKnows(tag: string | undefined): boolean {
  if (!tag) return false;
  try {
    new Intl.NumberFormat(tag);
    return true;
  } catch {
    return false;
  }
}

if (!intlKnows(navigator.language)) {
  try {
    Object.defineProperty(navigator, 'language', { value: 'en', configurable: true });
  } catch {
    // A browser that will not have it keeps its language; the plots then say they cannot be drawn.
  }
}
