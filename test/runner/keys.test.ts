import { describe, expect, it } from 'vitest';
import { contentHashOf, idempotencyKey, runIdFor } from '../../src/runner/core/identity.js';

describe('idempotency keys', () => {
  it('are the same from one genbatch version to the next: a lost state file still resends the key an earlier version sent', () => {
    // Values an earlier version derived (name-based UUIDs in genbatch's namespace): a change here would pay twice for work already sent.
    expect(runIdFor('/work/m.yaml', 'm')).toBe('e695c4d3-9c9a-5670-8677-ff946d583385');
    expect(idempotencyKey('r', 'i', 'h', 1)).toBe('3b8cc6aa-9d57-5e2d-a8fd-9628a61673a8');
  });

  it("take an item's content hash as an earlier version derived it: local paths left out, keys in any order", () => {
    // Values an earlier version derived (it removed the paths by a JSON round trip, then sorted the keys).
    const video = {
      id: 'hero',
      type: 'video',
      model: 'motion-x',
      prompt: 'a mug',
      duration: 5,
      seed: undefined,
      inputs: [
        { kind: 'file', path: '/abs/a.png', display: 'a.png' },
        { kind: 'item', id: 'x' },
      ],
      image: { kind: 'url', url: 'https://e/x.png' },
      extra: [1, undefined, 'z'],
    };
    expect(contentHashOf(video, { 'a.png': 'abc', path: 'def' })).toBe(
      '75bea84923a8ef2ebb8a7807e0ea4501e28e17a17e3d58d380c38a995ded2c51',
    );
    expect(contentHashOf({ prompt: 'p', model: 'studio-lite', type: 'image' }, {})).toBe(
      '18722ea6f22232539e154b4f4258493d90ef1d65c17fc9445bf9825bc448c00c',
    );
  });

  it('differ by run, item, content and attempt', () => {
    const keys = [
      idempotencyKey('r', 'i', 'h', 1),
      idempotencyKey('s', 'i', 'h', 1),
      idempotencyKey('r', 'j', 'h', 1),
      idempotencyKey('r', 'i', 'g', 1),
      idempotencyKey('r', 'i', 'h', 2),
    ];
    expect(new Set(keys).size).toBe(keys.length);
    for (const key of keys)
      expect(key).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });
});
