import type { GalleryCard } from '../data.js';
import { el } from '../dom.js';

/** An item's first output as the card shows it: an image that opens the lightbox, a video, or why there is none. */
export function media(item: GalleryCard): HTMLElement {
  const src = item.files[0];
  if (!src)
    return el('div', { class: `empty s-${item.state}`, text: item.state === 'done' ? 'no output' : item.state });
  if (item.type === 'video') {
    const video = el('video', { controls: '', playsinline: '', preload: 'none', src });
    if (item.poster) video.setAttribute('poster', item.poster);
    return video;
  }
  return el(
    'a',
    { href: src, class: 'open' },
    el('img', { src, alt: item.prompt, loading: 'lazy', decoding: 'async' }),
  );
}

export function card(item: GalleryCard): HTMLElement {
  const credits = item.refunded ? `${item.charged} credits, ${item.refunded} refunded` : `${item.charged} credits`;
  const files = item.files.length > 1 ? el('p', { class: 'files' }) : null;
  if (files)
    for (const [i, src] of item.files.entries()) files.append(el('a', { href: src, text: String(i + 1) }), ' ');
  const review = item.review
    ? el('span', {
        class: `badge review r-${item.review.decision}`,
        text: item.review.decision,
        title: item.review.note ?? '',
      })
    : null;
  return el(
    'article',
    { class: 'card', 'data-id': item.id, 'data-state': item.state, 'data-model': item.model },
    el('div', { class: 'media' }, media(item)),
    el(
      'div',
      { class: 'meta' },
      el(
        'h2',
        {},
        el('span', { class: 'id', text: item.id }),
        el('span', { class: `badge s-${item.state}`, text: item.state }),
        review,
      ),
      el('p', { class: 'prompt', text: item.prompt }),
      el(
        'p',
        { class: 'facts' },
        el('span', { class: 'model', text: item.model }),
        ' · ',
        el('span', { class: 'credits', text: credits }),
      ),
      item.reason
        ? el('p', { class: `reason s-${item.state}`, text: item.reason })
        : item.code
          ? el('p', { class: 'error' }, el('code', { text: item.code }), ` ${item.message ?? ''}`)
          : null,
      files,
      copiesLine(item),
    ),
  );
}

/** Links to the item's web copies (derivatives), by format and size. */
function copiesLine(item: GalleryCard): HTMLElement | null {
  if (!item.copies?.length) return null;
  const line = el('p', { class: 'copies' }, 'copies: ');
  for (const [i, copy] of item.copies.entries())
    line.append(i ? ' · ' : '', el('a', { href: copy.href, text: copy.label }));
  return line;
}

/** The facts the lightbox lists beside the output, those that have a value. */
export function facts(item: GalleryCard): [string, string][] {
  const credits = item.refunded ? `${item.charged} charged, ${item.refunded} refunded` : String(item.charged);
  const all: [string, string | null | undefined][] = [
    ['id', item.id],
    ['state', item.state],
    ['prompt', item.prompt],
    ['model', item.model],
    ['aspect ratio', item.aspectRatio],
    ['resolution', item.resolution],
    ['duration', item.duration ? `${item.duration} s` : null],
    ['credits', credits],
    ['job', item.jobId],
    ['file', item.files.join(' ') || null],
    ['copies', item.copies?.map((c) => `${c.href} (${c.label})`).join(' ') || null],
    ['version', item.version ? String(item.version) : null],
    ['review', item.review ? `${item.review.decision}${item.review.note ? `: ${item.review.note}` : ''}` : null],
    ['why', item.reason ?? null],
    ['error', item.code && !item.reason ? `${item.code} ${item.message ?? ''}` : null],
  ];
  return all.filter((f): f is [string, string] => Boolean(f[1]));
}
