/**
 * What was opened, closed in the reverse order: AsyncDisposableStack's
 * `defer`, which Node 20 does not have. Each close runs even when one before
 * it failed; the first failure is thrown once all have run. A scope within
 * the stack (a run's parts, let go at the run's end while what opened the
 * run stays open) is unwound to the mark taken before it.
 */
export class Closing implements AsyncDisposable {
  private readonly closers: (() => unknown)[] = [];
  private closed: Promise<void> | undefined;

  /** `close` runs before everything deferred earlier. */
  defer(close: () => unknown): void {
    if (this.closed) throw new Error('deferred after the close began');
    this.closers.push(close);
  }

  /** Where the stack stands: what is deferred from now on is unwound by `unwindTo` this mark. */
  mark(): number {
    return this.closers.length;
  }

  /** Closes, the last first, each close deferred since `mark`, once; what was deferred before it stays for `close`. */
  unwindTo(mark: number): Promise<void> {
    return runAll(this.closers.splice(mark));
  }

  /** Closes all once; later calls get the same promise. */
  close(): Promise<void> {
    this.closed ??= runAll(this.closers.splice(0));
    return this.closed;
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}

async function runAll(closers: (() => unknown)[]): Promise<void> {
  let failure: { error: unknown } | undefined;
  for (const close of closers.reverse()) {
    try {
      await close();
    } catch (error) {
      failure ??= { error };
    }
  }
  if (failure) throw failure.error;
}
