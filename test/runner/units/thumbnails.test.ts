import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { RunThumbnails } from '../../../src/copies/thumbs/run.js';
import { FolderSink } from '../../../src/sink/index.js';
import { makePng } from '../../../src/simulator/media.js';

/** `count` saved outputs larger than a card, in a folder of their own. */
function outputs(count: number) {
  const dir = mkdtempSync(join(tmpdir(), 'genbatch-thumbs-'));
  const png = makePng('large', 480, 600);
  const saved = Array.from({ length: count }, (_, i) => {
    const path = `item-${i}-1.png`;
    writeFileSync(join(dir, path), png);
    const dimensions = { width: 480, height: 600 };
    const file = { path, bytes: png.length, sha256: '', contentType: 'image/png', mtimeMs: 0, dimensions };
    return { ...file, itemId: `item-${i}`, jobId: `job-${i}`, idx: 1, version: 1, item: { plan: undefined } };
  });
  return { sink: new FolderSink(dir), saved, dir };
}

/** A maker whose every thumbnail waits until the test lets it go. */
function heldMaker() {
  const asked: string[] = [];
  const held: (() => void)[] = [];
  return {
    asked,
    release: () => {
      for (const go of held.splice(0)) go();
    },
    make: (source: string | Buffer) => {
      asked.push(String(source));
      return new Promise<Buffer | undefined>((done) => held.push(() => done(Buffer.from('thumb'))));
    },
  };
}

describe("a run's thumbnails, built alone", () => {
  it('never hold the run: one made at a time, at most 100 waiting, and the end waits for them within its bound', async () => {
    const { sink, saved, dir } = outputs(150);
    const maker = heldMaker();
    const thumbs = new RunThumbnails({
      dir: join(dir, 'thumbs'),
      outputs: sink.here,
      maker,
      endWithinMs: 200,
    });
    for (const output of saved) thumbs.saved(output);
    await expect.poll(() => maker.asked.length, { interval: 1 }).toBe(1);
    expect(thumbs.busy).toBe(true);
    // A maker that never answers: the run's end goes on once its bound has passed.
    await thumbs.settled();
    expect(maker.asked).toHaveLength(1);
    // Let go, the one being made and the 100 that waited are made; the 49 beyond were never queued.
    for (let made = 0; made < 101; made++) {
      await expect.poll(() => maker.asked.length, { interval: 1 }).toBe(made + 1);
      maker.release();
    }
    await thumbs.settled();
    expect(maker.asked).toHaveLength(101);
    expect(thumbs.busy).toBe(false);
    expect(readdirSync(join(dir, 'thumbs'))).toHaveLength(101);
  });

  it('closed, make nothing more of what waits', async () => {
    const { sink, saved, dir } = outputs(5);
    const maker = heldMaker();
    const thumbs = new RunThumbnails({ dir: join(dir, 'thumbs'), outputs: sink.here, maker });
    for (const output of saved) thumbs.saved(output);
    await expect.poll(() => maker.asked.length, { interval: 1 }).toBe(1);
    thumbs.close();
    maker.release();
    await thumbs.settled();
    expect(maker.asked).toHaveLength(1);
    expect(thumbs.busy).toBe(false);
  });

  it('are not made of an output whose item makes web copies, nor of one no larger than a card, nor of a video', async () => {
    const { sink, saved, dir } = outputs(3);
    const maker = heldMaker();
    const thumbs = new RunThumbnails({
      dir: join(dir, 'thumbs'),
      outputs: sink.here,
      maker,
    });
    // Its item makes a web copy: the card shows that.
    thumbs.saved({ ...saved[0]!, item: { plan: { derivatives: [{ format: 'webp', width: 400 }] } } });
    thumbs.saved({ ...saved[1]!, dimensions: { width: 400, height: 400 } });
    // A video: the download read no image size in its header.
    thumbs.saved({ ...saved[2]!, dimensions: undefined });
    await thumbs.settled();
    expect(maker.asked).toEqual([]);
  });
});
