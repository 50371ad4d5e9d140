import { statSync } from 'node:fs';
import { Store } from '../store/index.js';

/** The state, reopened when its file is replaced (a rehearsal starts over by removing it). */
export class StateHandle {
  store: Store;
  onReplaced: (() => void) | undefined;
  private inode: number;
  private readonly watch: NodeJS.Timeout;

  constructor(private readonly path: string) {
    this.store = Store.openForReview(path);
    this.inode = statSync(path).ino;
    this.watch = setInterval(() => this.check(), 1_000);
  }

  private check(): void {
    const inode = (() => {
      try {
        return statSync(this.path).ino;
      } catch {
        return undefined;
      }
    })();
    if (inode === undefined || inode === this.inode) return;
    try {
      const fresh = Store.openForReview(this.path);
      this.store.close();
      this.store = fresh;
      this.inode = inode;
      this.onReplaced?.();
    } catch {
      // Still being written by the run that replaced it: looked at again in a second.
    }
  }

  close(): void {
    clearInterval(this.watch);
    this.store.close();
  }
}
