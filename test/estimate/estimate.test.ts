import { describe, expect, it } from 'vitest';
import { Catalog } from '../../src/api/catalog.js';
import type { Model } from '../../src/api/index.js';
import { catalogVideoPrice, estimate, estimateDuration, priceOf } from '../../src/estimate/index.js';
import type { ResolvedItem } from '../../src/manifest/index.js';
import { DEFAULT_KEY_LIMITS, parseRate } from '../../src/scheduler/limits.js';

const where = { file: 'm.yaml', line: 1, column: 1, itemIndex: 0 };
const image = (id: string, model = 'studio-xl'): ResolvedItem => ({ id, type: 'image', model, prompt: 'p', where });
const video = (id: string, extra: Partial<ResolvedItem> = {}): ResolvedItem => ({
  id,
  type: 'video',
  model: 'motion-2',
  prompt: 'p',
  resolution: '720p',
  duration: '5',
  image: { kind: 'item', id: 'a' },
  where,
  ...extra,
});
const model = (m: Partial<Model> & { id: string; type: Model['type'] }): Model => ({ raw: {}, ...m });

describe('video prices from catalog shapes the spec does not show', () => {
  it.each([
    [
      'a list of {resolution, duration, credits}',
      { prices: [{ resolution: '720p', duration: '5', credits: 100 }] },
      100,
    ],
    [
      'a list with creditCost and numeric duration',
      { pricing: [{ resolution: '720p', duration: 5, creditCost: 90 }] },
      90,
    ],
    ['resolution → duration → credits', { creditCost: { '720p': { '5': 80 } } }, 80],
    ['per second by resolution', { creditCostPerSecond: { '720p': 12 } }, 60],
    ['per second flat', { creditsPerSecond: 10 }, 50],
  ])('%s', (_name, raw, credits) => {
    expect(catalogVideoPrice(raw, '720p', '5')).toBe(credits);
  });

  it('a flat creditCost on a video model is ambiguous: unknown, never a guess', () => {
    expect(catalogVideoPrice({ creditCost: 100 }, '720p', '5')).toBeUndefined();
  });

  it('falls back to the manifest prices, then to unknown', () => {
    const bare = model({ id: 'motion-2', type: 'video', durations: ['5'], resolutions: ['720p'] });
    expect(priceOf(video('v'), bare, { 'motion-2': { '720p': { '5': 70 } } })).toEqual({
      credits: 70,
      source: 'manifest',
    });
    expect(priceOf(video('v'), bare, undefined)).toEqual({ source: 'unknown' });
    expect(priceOf(image('i', 'mystery'), undefined, { mystery: 3 })).toEqual({ credits: 3, source: 'manifest' });
  });

  it('an omitted duration is priced only when the model allows just one', () => {
    const one = model({
      id: 'motion-2',
      type: 'video',
      durations: ['5'],
      resolutions: ['720p'],
      raw: { prices: [{ resolution: '720p', duration: '5', credits: 100 }] },
    });
    expect(priceOf(video('v', { duration: undefined as unknown as string }), one, undefined).credits).toBe(100);
    const two = model({ ...one, durations: ['5', '10'] });
    expect(priceOf(video('v', { duration: undefined as unknown as string }), two, undefined).source).toBe('unknown');
  });
});

describe('estimate', () => {
  const catalog = new Catalog(
    new Map([
      ['image:studio-xl', model({ id: 'studio-xl', type: 'image', creditCost: 8 })],
      ['image:studio-lite', model({ id: 'studio-lite', type: 'image', creditCost: 2 })],
      [
        'video:motion-2',
        model({
          id: 'motion-2',
          type: 'video',
          raw: { prices: [{ resolution: '720p', duration: '5', credits: 100 }] },
        }),
      ],
    ]),
  );

  it('sums credits per model, and says when some are unpriced', () => {
    const items = [image('a'), image('b'), image('c', 'studio-lite'), video('v'), image('u', 'unknown-model')];
    const e = estimate({ items, catalog, prices: undefined, limits: DEFAULT_KEY_LIMITS, balance: 100 });
    expect(e.items).toEqual({ total: 5, image: 4, video: 1 });
    expect(e.models.map((m) => [m.model, m.items, m.credits, m.unpriced])).toEqual([
      ['motion-2', 1, 100, 0],
      ['studio-xl', 2, 16, 0],
      ['studio-lite', 1, 2, 0],
      ['unknown-model', 1, 0, 1],
    ]);
    expect(e.credits).toEqual({ total: 118, unpricedItems: 1, complete: false });
    expect(e.balance).toEqual({ credits: 100, enough: false });
  });

  it('counts key days at the daily cap and the items a budget allows', () => {
    const items = Array.from({ length: 5000 }, (_, i) => image(`i${i}`));
    const e = estimate({ items, catalog, prices: undefined, limits: DEFAULT_KEY_LIMITS, maxCredits: 1000 });
    expect(e.credits.total).toBe(40_000);
    expect(e.dailyCap.keyDays).toBe(2);
    expect(e.budget).toEqual({ maxCredits: 1000, within: false, itemsWithin: 125 });
    expect(e.duration.limitedBy).toBe('daily cap');
    expect(e.duration.seconds).toBeGreaterThan(86_400);
  });
});

describe('duration from the limits', () => {
  it('is bound by the submission rate for many short images', () => {
    const d = estimateDuration({ images: 600, videos: 0, credits: 4800 }, DEFAULT_KEY_LIMITS);
    expect(d.limitedBy).toBe('submission rate');
    expect(d.seconds).toBe(600 * 6 + 50);
  });

  it('is bound by the video slots for many videos', () => {
    const d = estimateDuration({ images: 0, videos: 100, credits: 10_000 }, DEFAULT_KEY_LIMITS);
    expect(d.limitedBy).toBe('video slots');
    expect(d.seconds).toBe((100 * 330) / 5 + 330);
  });

  it('follows the rate flags', () => {
    const d = estimateDuration(
      { images: 100, videos: 0, credits: 800 },
      { ...DEFAULT_KEY_LIMITS, submit: parseRate('5/1m') },
    );
    expect(d.seconds).toBe(100 * 12 + 50);
  });
});

describe('rates', () => {
  it.each([
    ['10/60s', { count: 10, windowMs: 60_000 }],
    ['10/1m', { count: 10, windowMs: 60_000 }],
    ['10/2s', { count: 10, windowMs: 2000 }],
    ['3/500ms', { count: 3, windowMs: 500 }],
  ])('%s', (text, rate) => expect(parseRate(text)).toEqual(rate));

  it.each(['10', '10/', 'ten/60s', '0/60s', '10/0s', '10/60h'])('refuses %j', (text) =>
    expect(() => parseRate(text)).toThrow(/rate/),
  );
});
