import { describe, expect, it } from 'vitest';
import { renderGallery } from '../../src/report/index.js';
import { postersFor } from '../../src/report/posters.js';
import type { ResultRow } from '../../src/report/index.js';

const row = (over: Partial<ResultRow>): ResultRow => ({
  id: 'x',
  state: 'done',
  type: 'image',
  model: 'studio-lite',
  prompt: 'p',
  aspectRatio: null,
  resolution: null,
  duration: null,
  files: [],
  jobIds: [],
  creditsCharged: 0,
  creditsRefunded: 0,
  errorCode: null,
  errorMessage: null,
  values: {},
  ...over,
});
const render = (rows: ResultRow[], posters = new Map<string, string>()) =>
  renderGallery({
    title: 't</title><script>alert(1)</script>',
    generatedAt: 0,
    rows,
    posters,
    credits: { charged: 0, refunded: 0, net: 0 },
    failures: { '<i>CODE</i>': 1 },
    run: { seconds: 0, sessions: 1 },
  });

describe('the gallery page', () => {
  it('treats every value from the manifest or the service as text, and every file name as one path', async () => {
    const hostile = row({
      id: '"><img src=x onerror=alert(1)>',
      model: '"><script>alert(2)</script>',
      prompt: '</script><script>alert(3)</script><!--',
      files: [{ path: 'sub dir/a#b?c&d".png', bytes: 1, sha256: 'h' }],
    });
    const failed = row({ id: 'f', state: 'failed', errorCode: 'E<1>', errorMessage: '<script>alert(4)</script>' });
    const html = await render([hostile, failed]);
    // Two script elements: the items as JSON, and the page's own code. No value can open another.
    expect(html.match(/<script\b/g)).toHaveLength(2);
    const data = /<script type="application\/json" id="items">([\s\S]*?)<\/script>/.exec(html)![1]!;
    expect(data).not.toContain('<');
    const items = JSON.parse(data);
    expect(items.map((i: { id: string; prompt: string; model: string }) => [i.id, i.prompt, i.model])).toEqual([
      [hostile.id, hostile.prompt, hostile.model],
      ['f', 'p', 'studio-lite'],
    ]);
    expect(items[0].files).toEqual(['sub%20dir/a%23b%3Fc%26d%22.png']);
    expect(items[1]).toMatchObject({ code: 'E<1>', message: '<script>alert(4)</script>' });
    // The server-drawn parts (title, model filter, failures) escape too.
    expect(html).not.toContain('<i>CODE</i>');
    expect(html).toContain('<option value="&#34;&#62;&#60;script&#62;alert(2)&#60;/script&#62;">');
  });

  it('has no reference that would leave the file system: a CSP forbids the network', async () => {
    const html = await render([row({ files: [{ path: 'a.png', bytes: 1, sha256: 'h' }] })]);
    expect(html).toContain(`content="default-src 'none'; img-src 'self' data:; media-src 'self';`);
    expect(html).not.toMatch(/(?:src|href)="(?:https?:)?\/\//);
  });

  it("gives a video without a start image a drawn poster naming its model; one that extends another gets its source's start image", async () => {
    const rows = [
      row({ id: 'still', files: [{ path: 'still-1.png', bytes: 1, sha256: 'h' }] }),
      row({ id: 'from-text', type: 'video', model: 'motion<x>', files: [{ path: 'v.mp4', bytes: 1, sha256: 'h' }] }),
      row({ id: 'spin', type: 'video', files: [{ path: 's.mp4', bytes: 1, sha256: 'h' }] }),
      row({ id: 'longer', type: 'video', files: [{ path: 'l.mp4', bytes: 1, sha256: 'h' }] }),
    ];
    const specs = new Map<string, any>([
      ['from-text', { type: 'video', duration: '5' }],
      ['spin', { type: 'video', image: { kind: 'item', id: 'still' } }],
      ['longer', { type: 'video', source: 'spin' }],
    ]);
    const posters = await postersFor(rows, {
      specOf: (id) => specs.get(id),
      firstFileOf: (id) => rows.find((r) => r.id === id)?.files[0]?.path,
    });
    expect(posters.get('spin')).toBe('still-1.png');
    expect(posters.get('longer')).toBe('still-1.png');
    const drawn = decodeURIComponent(posters.get('from-text')!.replace('data:image/svg+xml,', ''));
    expect(drawn).toMatch(/^<svg /);
    expect(drawn).toContain('motion&#60;x&#62; · 5 s');
    expect(posters.has('still')).toBe(false);
  });
});

describe("the gallery's header", () => {
  it('counts in words that agree: 1 item, 1 credit, 2 items', async () => {
    const page = await renderGallery({
      title: 't',
      generatedAt: 0,
      rows: [row({ id: 'only' })],
      posters: new Map(),
      credits: { charged: 1, refunded: 0, net: 1 },
      failures: {},
      run: { seconds: 0, sessions: 1 },
      tags: [
        { tag: 'edit', items: 1, net: 1 },
        { tag: 'hero', items: 2, net: 16 },
      ],
    });
    expect(page).toContain('<b>1</b> item</span>');
    expect(page).toContain('tag <b>edit</b>: 1 item, 1 credit net');
    expect(page).toContain('tag <b>hero</b>: 2 items, 16 credits net');
  });
});
