import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { ServerResponse } from 'node:http';
import { join } from 'node:path';
import { buffer } from 'node:stream/consumers';
import PQueue from 'p-queue';
import { sharpModule } from '../copies/derivative.js';
import { FolderSink, type OutputSink, writeWhole } from '../sink/index.js';
import { serveOutput } from './files.js';

/** The folder beside a state that keeps its thumbnails: `<state>.thumbs/` (a state's own, like its log). */
export function thumbsBeside(statePath: string): string {
  return `${statePath.replace(/\.sqlite$/, '')}.thumbs`;
}

/** A card is about 200 pixels wide: 400 keeps it sharp on a dense screen. */
export const THUMB_SIZE = 400;

/**
 * Thumbnails for the review grid's cards of outputs with no web copy: a 2048-pixel original is decoded once,
 * by the first card that shows it, and its 400-pixel WebP kept in a folder beside the state, so every later
 * look (and every later session) reads a few kilobytes. One made at a time: the server stays small.
 */
export class Thumbnails {
  private readonly making = new PQueue({ concurrency: 1 });
  private readonly pending = new Map<string, Promise<Buffer | undefined>>();
  private readonly kept: FolderSink;

  constructor(
    /** The folder they are kept in (made when the first is). */
    readonly dir: string,
    private readonly outputs: OutputSink,
  ) {
    this.kept = new FolderSink(dir);
  }

  /** The thumbnail of a recorded image output; anything it cannot make one of is served as the output itself. */
  async serve(res: ServerResponse, relative: string, known: (path: string) => boolean): Promise<void> {
    if (!known(relative)) return serveOutput(res, this.outputs, relative, () => false);
    const thumb = await this.thumbOf(relative);
    if (!thumb) return serveOutput(res, this.outputs, relative, known);
    res
      .writeHead(200, {
        'content-type': 'image/webp',
        'content-length': thumb.length,
        // An output's bytes never change (a regeneration is a new version, at a new path): nor does its thumbnail.
        'cache-control': 'private, max-age=86400, immutable',
      })
      .end(thumb);
  }

  private thumbOf(relative: string): Promise<Buffer | undefined> {
    let made = this.pending.get(relative);
    if (!made) {
      made = this.keptOrMade(relative).finally(() => this.pending.delete(relative));
      this.pending.set(relative, made);
    }
    return made;
  }

  private async keptOrMade(relative: string): Promise<Buffer | undefined> {
    const name = `${createHash('sha256').update(relative).digest('hex').slice(0, 32)}.webp`;
    const found = await readFile(join(this.dir, name)).catch(() => undefined);
    if (found) return found;
    return this.making.add(() => this.make(relative, name));
  }

  private async make(relative: string, name: string): Promise<Buffer | undefined> {
    const file = await this.outputs.open(relative);
    if (!file) return undefined;
    try {
      const sharp = await sharpModule();
      // Read top to bottom once: libvips resizes as it decodes, without the whole image in memory.
      const thumb = await sharp(await buffer(file.read()), { failOn: 'error', sequentialRead: true })
        .rotate()
        .resize({ width: THUMB_SIZE, height: THUMB_SIZE, fit: 'inside', withoutEnlargement: true })
        .webp({ quality: 75, effort: 2 })
        .toBuffer();
      // Kept whole or not at all; a folder that cannot be written costs only the keeping.
      await writeWhole(this.kept, name, 'replace', thumb).catch(() => {});
      return thumb;
    } catch {
      // Not an image sharp reads (a video, a format it lacks): the card shows the output itself.
      return undefined;
    }
  }
}
