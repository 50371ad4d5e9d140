import { describe, expect, it } from 'vitest';
import { contentHashOf, idempotencyKey, runIdFor } from '../../src/runner/core/identity.js';

/** A manifest's top as the run id reads it: its name, its `id:`, the folder it is in. */
const top = (name: string, dir: string, id?: string) =>
  ({ name, manifest: id ? { id } : {}, source: { dir } }) as unknown as Parameters<typeof runIdFor>[0];

describe('idempotency keys', () => {
  it('are the same from one genbatch version to the next: a lost state file still resends the key an earlier version sent', () => {
    // Values an earlier version derived (name-based UUIDs in genbatch's namespace): a change here would pay twice for work already sent.
    expect(idempotencyKey('r', 'i', 'h', 1)).toBe('3b8cc6aa-9d57-5e2d-a8fd-9628a61673a8');
    expect(runIdFor(top('m', '/work'), '/work/out/m')).toBe('d9f75867-7e12-59c5-822f-8d64e12bbde1');
    expect(runIdFor(top('m', '/work', 'catalog-2026'), '/x')).toBe('eccf937b-b7d3-50fe-b0c8-85d91808cdda');
  });

  it("come from the run's name and destination, or its id: never a path of this machine", () => {
    const here = runIdFor(top('m', '/work'), '/work/out/m');
    // The same manifest checked out elsewhere, its outputs beside it: the same run, the same keys.
    expect(runIdFor(top('m', '/srv/checkout'), '/srv/checkout/out/m')).toBe(here);
    // The same bucket, however its URL ends.
    expect(runIdFor(top('m', '/a'), 's3://b/p/')).toBe(runIdFor(top('m', '/b'), 's3://b/p'));
    // Another name, or another destination outside the manifest's folder: another run.
    expect(runIdFor(top('n', '/work'), '/work/out/m')).not.toBe(here);
    expect(runIdFor(top('m', '/work'), '/elsewhere/out/m')).not.toBe(here);
    // An explicit id is the run, wherever its outputs go.
    expect(runIdFor(top('m', '/a', 'cat'), 's3://b/p')).toBe(runIdFor(top('z', '/b', 'cat'), '/tmp/x'));
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
