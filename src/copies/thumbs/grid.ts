import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { buffer } from 'node:stream/consumers';
import PQueue from 'p-queue';
import { FolderSink, type OutputSink, writeWhole } from '../../sink/index.js';
import { keptName } from './kept.js';
import { thumbMaker } from './maker.js';
/**
 * The first cards whose thumbnails come inside the page as served, and are made ahead of it: a large screen's
 * first screen (9 cards across and 4 down at 1920 x 1080), some 600 KB at 14 KB a thumbnail.
 */
export const FIRST_SCREEN_THUMBS = 40;

/** What a page asks for is made first; what is made ahead, after, the newest round (a number from 1) first. */
const ASKED = Number.MAX_SAFE_INTEGER;
/**
 * The rounds made ahead that are kept waiting: a search typed letter by letter asks for one a letter, and a
 * screen passed a minute ago is still made once the newer are (at 10, a few filters in quick succession left
 * the first ones unmade for the next look).
 */
const ROUNDS_KEPT = 50;
/** Outputs remembered as settled (some 10 MB at most), then forgotten and looked at again. */
const SETTLED_MAX = 100_000;

/**
 * Thumbnails for the review grid's cards of outputs with no web copy: a 2048-pixel original is decoded once,
 * by the first card that shows it, and its 400-pixel WebP kept in a folder beside the state, so every later
 * look (and every later session) reads a few kilobytes. Made one at a time, in a child process.
 */
export class GridThumbnails {
  private readonly making = new PQueue({ concurrency: 1 });
  private readonly pending = new Map<string, Promise<Buffer | undefined>>();
  private readonly folder: FolderSink;
  private readonly maker = thumbMaker();
  /** The newest round of thumbnails made ahead. */
  private round = 0;
  private readonly settled = new Set<string>();

  constructor(
    /** The folder they are kept in (made when the first is). */
    readonly dir: string,
    private readonly outputs: OutputSink,
  ) {
    this.folder = new FolderSink(dir);
  }

  /**
   * Made before anything asks for them, after everything a page asked for: the first screen's thumbnails at the
   * server's start and whenever the page is served, and each slice's screen as the slice is answered. A first
   * open waited for the maker to start and decode each original as the page asked, three at a time; a screen
   * passed quickly left most of its thumbnails unmade. The newest screen's come first; those of screens more
   * than ROUNDS_KEPT back are given up, and so are those this server saw kept or could not make.
   */
  ahead(relatives: readonly string[]): void {
    if (relatives.length === 0) return;
    const round = ++this.round;
    for (const relative of relatives)
      void this.making.add(
        async () => {
          if (round <= this.round - ROUNDS_KEPT || this.pending.has(relative) || this.settled.has(relative)) return;
          // Looked for, not read: a screen made already cost forty reads beside the page's own asks for it (its
          // first three thumbnails took 17-21 ms, 4-8 without).
          if (existsSync(join(this.dir, keptName(relative)))) return this.settle(relative);
          // Nothing waits for these: one that cannot be made is the card's own output when it is asked for.
          await this.make(relative).catch(() => {});
        },
        { priority: round },
      );
  }

  /** A thumbnail already made and kept, read (never made here): what the page as served carries inside it. */
  async kept(relative: string): Promise<Buffer | undefined> {
    const found = await readFile(join(this.dir, keptName(relative))).catch(() => undefined);
    if (found) this.settle(relative);
    return found;
  }

  /**
   * Kept, or not to be made (no image the maker reads, no file), as this server saw: a round made ahead passes
   * over these, neither reading them again nor starting the maker on an output it failed on. A page's own ask
   * still tries.
   */
  private settle(relative: string): void {
    if (this.settled.size >= SETTLED_MAX) this.settled.clear();
    this.settled.add(relative);
  }

  /** Nothing more is made ahead (the maker ends by itself once idle). */
  close(): void {
    this.making.clear();
  }

  /** The thumbnail of an output, kept or made now before anything made ahead; undefined when none can be made. */
  thumbOf(relative: string): Promise<Buffer | undefined> {
    let made = this.pending.get(relative);
    if (!made) {
      made = this.keptOrMade(relative).finally(() => this.pending.delete(relative));
      this.pending.set(relative, made);
    }
    return made;
  }

  private async keptOrMade(relative: string): Promise<Buffer | undefined> {
    return (await this.kept(relative)) ?? this.making.add(() => this.make(relative), { priority: ASKED });
  }

  /** The thumbnail, made unless it was kept meanwhile (made ahead while this waited its turn). */
  private async make(relative: string): Promise<Buffer | undefined> {
    const found = await this.kept(relative);
    if (found) return found;
    // A folder's output is read by the maker itself; a bucket's comes through here (the server holds one at a time).
    const path = await this.outputs.here?.fileOf(relative);
    const file = path ? undefined : await this.outputs.open(relative);
    const thumb = path || file ? await this.maker.make(path ?? (await buffer(file!.read()))) : undefined;
    // Kept whole or not at all; a folder that cannot be written costs only the keeping.
    if (thumb) await writeWhole(this.folder, keptName(relative), 'replace', thumb).catch(() => {});
    this.settle(relative);
    return thumb;
  }
}
