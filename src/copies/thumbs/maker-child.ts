/**
 * The child process that makes thumbnails, for `genbatch review` and for a run as it saves its outputs. libvips
 * decodes on libuv's threads, and glibc keeps a memory arena for each thread that touched it: in the review server
 * that was 50-70 MB it never gave back. Here it is the child's (started with few arenas), and it goes when the child
 * does, after a minute without work.
 */
import { CARD_WIDTH } from '../../browser/data.js';
import { sharpModule } from '../web-copy.js';

/** A request: an output's file on this machine, or its bytes; the answer: its thumbnail (WebP), or why there is none. */
export type ThumbAsked = { id: number; path: string } | { id: number; data: Uint8Array };
export type ThumbMade = { id: number; thumb: Uint8Array } | { id: number; error: string };

export async function thumbnailOf(source: string | Uint8Array): Promise<Buffer> {
  const sharp = await sharpModule();
  // Read top to bottom once: libvips resizes as it decodes, without the whole image in memory.
  return sharp(source, { failOn: 'error', sequentialRead: true })
    .rotate()
    .resize({ width: CARD_WIDTH, height: CARD_WIDTH, fit: 'inside', withoutEnlargement: true })
    .webp({ quality: 75, effort: 2 })
    .toBuffer();
}

if (process.send && process.env.GENBATCH_THUMB_MAKER === '1') {
  process.on('message', (asked: ThumbAsked) => {
    thumbnailOf('path' in asked ? asked.path : asked.data).then(
      (thumb) => process.send!({ id: asked.id, thumb } satisfies ThumbMade),
      (error: Error) => process.send!({ id: asked.id, error: error.message } satisfies ThumbMade),
    );
  });
  // Its parent gone, the child goes too.
  process.on('disconnect', () => process.exit(0));
}
