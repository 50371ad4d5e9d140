import { existsSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import { imageSize } from 'image-size';
import PQueue from 'p-queue';
import { keptName } from '../../copies/thumbs/kept.js';
import { ThumbMaker } from '../../copies/thumbs/maker.js';
import { FolderSink, writeWhole } from '../../sink/index.js';
import { CARD_WIDTH } from '../../store/index.js';
import type { SavedOutput } from '../item/download-task.js';

/**
 * Saved outputs waiting for their thumbnail beyond which another gets none now (a run that saves faster than one
 * core makes them): review makes it the first time a card shows it.
 */
const WAITING_MAX = 100;
/** At the run's end, what is still waiting is made within this; the rest is review's to make. */
const END_WITHIN_MS = 10_000;
/** A file's first bytes, where PNG and WebP say their size; a JPEG's comes after its metadata, in the first 64 KB. */
const FIRST_BYTES = 512;
const HEADER_BYTES = 64 * 1024;

/** What the run's thumbnails are made from. */
export interface RunThumbnailsDeps {
  /** The folder the review keeps them in (`<state>.thumbs/`). */
  readonly dir: string;
  readonly outputs: FolderSink;
  /** An item's spec as stored (its copy plan is there). */
  readonly specOf: (itemId: string) => string | undefined;
  /** The child that makes them (tests give their own). */
  readonly maker?: Pick<ThumbMaker, 'make' | 'close'>;
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
  private readonly maker: Pick<ThumbMaker, 'make' | 'close'>;
  private readonly folder: FolderSink;

  constructor(private readonly deps: RunThumbnailsDeps) {
    this.folder = new FolderSink(deps.dir);
    this.maker = deps.maker ?? new ThumbMaker();
  }

  /** An output just saved: its thumbnail is made after those before it, unless too many are waiting. */
  saved(output: SavedOutput): void {
    if (!output.contentType?.startsWith('image/') || this.queue.size >= WAITING_MAX) return;
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

  /** The maker ends: what still waits is left to review. */
  close(): void {
    this.queue.clear();
    this.maker.close();
  }

  private async make(output: SavedOutput): Promise<void> {
    // The cheapest look first: most outputs of a rehearsal, and of the tests, are no larger than a card.
    const file = this.deps.outputs.localPath(output.path);
    if (!(await largerThanCard(file)) || !this.cardShowsOriginal(output.itemId)) return;
    const name = keptName(output.path);
    if (existsSync(join(this.deps.dir, name))) return;
    const thumb = await this.maker.make(file);
    if (thumb) await writeWhole(this.folder, name, 'replace', thumb);
  }

  /** A card shows a web copy when the item makes them, else the output (as its thumbnail). */
  private cardShowsOriginal(itemId: string): boolean {
    const spec = this.deps.specOf(itemId);
    const plan = spec ? (JSON.parse(spec) as { finish?: { derivatives?: unknown[] } }).finish : undefined;
    return !plan?.derivatives?.length;
  }
}

/**
 * Whether an image is wider or taller than a card, by its header: one no larger is shown as it is (and one
 * whose header says no size is left to review). A PNG or WebP says its size in its first bytes; a JPEG after
 * its metadata, so a larger read follows when the first says nothing.
 */
async function largerThanCard(file: string): Promise<boolean> {
  const handle = await open(file, 'r');
  try {
    for (const length of [FIRST_BYTES, HEADER_BYTES]) {
      const { buffer, bytesRead } = await handle.read(Buffer.allocUnsafe(length), 0, length, 0);
      const size = sizeOf(buffer.subarray(0, bytesRead));
      if (size) return size.width > CARD_WIDTH || size.height > CARD_WIDTH;
      if (bytesRead < length) return false;
    }
    return false;
  } finally {
    await handle.close();
  }
}

function sizeOf(header: Uint8Array): { width: number; height: number } | undefined {
  try {
    return imageSize(header);
  } catch {
    return undefined;
  }
}
