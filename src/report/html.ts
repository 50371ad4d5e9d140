/** Text made safe inside HTML or XML, in content and in quoted attributes. */
export const escapeHtml = (text: string | number) => String(text).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** A path relative to the gallery, as a URL: each segment percent-encoded (names may hold # or ?). */
export function relativeUrl(path: string): string {
  return path.split('/').map(encodeURIComponent).join('/');
}
