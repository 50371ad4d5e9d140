import { existsSync } from 'node:fs';
import { join } from 'node:path';
import PQueue from 'p-queue';
import { FolderSink, writeWhole, type FilesHere } from '../../sink/index.js';
import { CARD_WIDTH } from '../../browser/data.js';
import { keptName } from './kept.js';
import { thumbMaker, type ThumbMaker } from './maker.js';

/** An output a run just saved, as its thumbnail needs it: its path in the place, its size if an image, its item's copies. */
export interface SavedImage {
  readonly path: string;
  readonly dimensions?: { width: number; height: number } | undefined;
  /** The item's copy plan: with web copies, the card shows those. */
  readonly item: { readonly plan?: { readonly derivatives?: readonly unknown[] } | undefined };
}

/**
 * Saved outputs waiting for their thumbnail beyond which another gets none now (a run that saves faster than one
 * core makes them): review makes it the first time a card shows it.
 */
const WAITING_MAX = 100;
/** At the run's end, what is still waiting is made within this; the rest is review's to make. */
const END_WITHIN_MS = 10_000;

/** What the run's thumbnails are made from. */
export interface RunThumbnailsDeps {
  /** The folder the review keeps them in (`<state>.thumbs/`). */
  readonly dir: string;
  /** Where the run's outputs are on this machine. */
  readonly outputs: FilesHere;
  /** The child that makes them: the process's one (tests give their own). */
  readonly maker?: Pick<ThumbMaker, 'make'>;
  /** How long the run's end waits for those still waiting (tests make it short). */
  readonly endWithinMs?: number;
}

/**
 * The review grid's thumbnail of each image output the run saves, made while it runs, so that a first look at
 * the run's cards decodes no original (a 2048-pixel PNG takes 25-90 ms, and a first screen forty of them). Only
 * outputs larger than a card, kept in a folder here, whose item makes no web copy (the card shows that): one at a
 * time in a child process, off every path that pays or saves. Nothing here is owed: a thumbnail not made is
 * made by review when a card first shows it, and a failure is never the run's.
 */
export class RunThumbnails {
  private readonly queue = new PQueue({ concurrency: 1 });
  private readonly maker: Pick<ThumbMaker, 'make'>;
  private readonly folder: FolderSink;

  constructor(private readonly deps: RunThumbnailsDeps) {
    this.folder = new FolderSink(deps.dir);
    this.maker = deps.maker ?? thumbMaker();
  }

  /**
   * An output just saved: its thumbnail is made after those before it, if it is an image larger than a card
   * (its size as the download read it in its header: one no larger is shown as it is), unless too many wait.
   */
  saved(output: SavedImage): void {
    const size = output.dimensions;
    if (!size || (size.width <= CARD_WIDTH && size.height <= CARD_WIDTH) || this.queue.size >= WAITING_MAX) return;
    void this.queue.add(() => this.make(output).catch(() => {}));
  }

  /** Made or waiting (a known wait for the watchdog). */
  get busy(): boolean {
    return this.queue.size + this.queue.pending > 0;
  }

  /** What is waiting, made within END_WITHIN_MS at most. */
  async settled(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<void>((done) => {
      timer = setTimeout(done, this.deps.endWithinMs ?? END_WITHIN_MS);
    });
    await Promise.race([this.queue.onIdle(), late]).finally(() => clearTimeout(timer));
  }

  /** Nothing more is made: what still waits is left to review (the maker ends by itself once idle). */
  close(): void {
    this.queue.clear();
  }

  private async make(output: SavedImage): Promise<void> {
    const name = keptName(output.path);
    // A card shows a web copy when the item makes them, else the output (as its thumbnail).
    if (output.item.plan?.derivatives?.length || existsSync(join(this.deps.dir, name))) return;
    const thumb = await this.maker.make(this.deps.outputs.pathOf(output.path));
    if (thumb) await writeWhole(this.folder, name, 'replace', thumb);
  }
}
