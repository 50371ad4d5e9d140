import type { ReviewCardData, VersionData } from '../data.js';
import { byId, el } from '../dom.js';
import { cardAt, decisionOf } from './grid.js';
import { api, app, fileUrl } from './state.js';

/** The lightbox: one output zoomed, or the item's versions side by side (`app.comparing`). */
function figure(src: string, type: string, caption: Node, current: boolean): HTMLElement {
  const m =
    type === 'video'
      ? el('video', { src, controls: '', preload: 'auto' })
      : el('img', { src, alt: caption.textContent ?? '' });
  return el('figure', { className: current ? 'current' : '' }, m, el('figcaption', {}, caption));
}

export function openLightbox(i: number): void {
  const c = cardAt(i);
  if (!c) return;
  app.lightboxAt = i;
  byId('lb-pos').textContent =
    `${i + 1} of ${app.total} · ${c.id} · ${decisionOf(c) ?? c.state}${c.note ? ` · ${c.note}` : ''}`;
  byId('lightbox').hidden = false;
  if (app.comparing) return void showVersions(c);
  const caption = el('span', {}, el('b', { text: c.id }), ` ${c.prompt}`);
  byId('lb-body').replaceChildren(c.file ? figure(fileUrl(c.file), c.type, caption, true) : el('p', { text: c.state }));
}

async function showVersions(c: ReviewCardData): Promise<void> {
  const v = await api<{ versions: VersionData[] }>(`/api/versions?id=${encodeURIComponent(c.id)}`);
  if (app.lightboxAt < 0 || cardAt(app.lightboxAt)?.id !== c.id) return;
  const body = byId('lb-body');
  if (!v.versions.length) {
    body.replaceChildren(el('p', { text: 'no version on disk yet' }));
    return;
  }
  body.replaceChildren(
    ...v.versions.map((ver) => {
      const caption = el(
        'span',
        {},
        el('b', { text: `v${ver.version}${ver.current ? ' (current)' : ''}` }),
        ` ${ver.decision ?? 'unreviewed'}${ver.note ? `: ${ver.note}` : ''}`,
        ...ver.copies.flatMap((copy) => [
          ' · ',
          el('a', { href: fileUrl(copy.path), target: '_blank', text: `${copy.format} ${copy.width}×${copy.height}` }),
        ]),
      );
      return figure(fileUrl(ver.files[0]!), c.type, caption, ver.current);
    }),
  );
}

export function closeLightbox(): void {
  byId('lightbox').hidden = true;
  app.lightboxAt = -1;
  app.comparing = false;
  byId('lb-body').replaceChildren();
  app.scroller.focus();
}
