/**
 * Callers waiting for one thing to happen (a resume, the service's return,
 * an idle queue): each is let go with what `release` gives, or with `early`
 * as soon as its own signal aborts. A released caller is forgotten, so the
 * next `release` lets go only those who came since.
 */
export class Waiters<T = void> {
  private readonly resolvers = new Set<(value: T) => void>();

  /** How many wait now. */
  get size(): number {
    return this.resolvers.size;
  }

  /** Resolves with what `release` gives, or with `early` when `signal` aborts first (at once if it has). */
  wait(signal?: AbortSignal, early?: T): Promise<T> {
    if (signal?.aborted) return Promise.resolve(early as T);
    return new Promise<T>((resolve) => {
      const done = (value: T) => {
        this.resolvers.delete(done);
        signal?.removeEventListener('abort', onAbort);
        resolve(value);
      };
      const onAbort = () => done(early as T);
      this.resolvers.add(done);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** Lets every caller waiting now go with `value`. */
  release(value: T): void {
    for (const done of [...this.resolvers]) done(value);
  }
}
