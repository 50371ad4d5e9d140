import { type ChildProcess, fork } from 'node:child_process';
import { join } from 'node:path';
import { builtDir } from '../../util/built.js';
import type { ThumbAsked, ThumbMade } from './maker-child.js';

/** The thumbnail maker ends after this long without work: its memory goes back to the machine. */
const MAKER_IDLE_MS = 60_000;
/** A thumbnail not made in this long is not waited for: the card shows the output itself. */
const MAKE_TIMEOUT_MS = 30_000;

/** The child process that makes thumbnails (maker-child.ts), started when needed and ended after a minute idle. */
export class ThumbMaker {
  private child: ChildProcess | undefined;
  private next = 1;
  private readonly waiting = new Map<number, (thumb: Buffer | undefined) => void>();
  private idle: NodeJS.Timeout | undefined;

  /** The thumbnail of a file or bytes; undefined when they are no image it reads, or it failed or took too long. */
  make(source: string | Buffer): Promise<Buffer | undefined> {
    const child = this.started();
    clearTimeout(this.idle);
    const id = this.next++;
    return new Promise((resolve) => {
      const timer = setTimeout(() => this.answer(id, undefined), MAKE_TIMEOUT_MS);
      this.waiting.set(id, (thumb) => {
        clearTimeout(timer);
        resolve(thumb);
      });
      const asked: ThumbAsked = typeof source === 'string' ? { id, path: source } : { id, data: source };
      child.send(asked, (error) => {
        if (error) this.answer(id, undefined);
      });
    });
  }

  close(): void {
    clearTimeout(this.idle);
    this.child?.kill();
    this.child = undefined;
    for (const id of [...this.waiting.keys()]) this.answer(id, undefined);
  }

  private started(): ChildProcess {
    if (this.child) return this.child;
    const child = fork(join(builtDir(), 'copies', 'thumbs', 'maker-child.js'), [], {
      serialization: 'advanced',
      // Nothing of this process's own loader flags; few malloc arenas for libvips's threads.
      execArgv: [],
      env: { ...process.env, GENBATCH_THUMB_MAKER: '1', MALLOC_ARENA_MAX: '2' },
      stdio: ['ignore', 'ignore', 'ignore', 'ipc'],
    });
    child.on('message', (m: ThumbMade) => this.answer(m.id, 'thumb' in m ? Buffer.from(m.thumb) : undefined));
    child.on('exit', () => {
      if (this.child === child) this.child = undefined;
      for (const id of [...this.waiting.keys()]) this.answer(id, undefined);
    });
    child.on('error', () => {});
    // It never keeps this process alive by itself: the server's sockets, or the run, do while a thumbnail is waited for.
    child.unref();
    child.channel?.unref();
    this.child = child;
    return child;
  }

  private answer(id: number, thumb: Buffer | undefined): void {
    const done = this.waiting.get(id);
    if (!done) return;
    this.waiting.delete(id);
    done(thumb);
    if (this.waiting.size === 0) {
      clearTimeout(this.idle);
      this.idle = setTimeout(() => this.close(), MAKER_IDLE_MS);
      this.idle.unref();
    }
  }
}

let shared: ThumbMaker | undefined;

/**
 * The process's one maker, for the run and for review alike: one child at most, whoever asks. It ends itself
 * after a minute without work and never holds the process, so no user closes it.
 */
export function thumbMaker(): ThumbMaker {
  return (shared ??= new ThumbMaker());
}
