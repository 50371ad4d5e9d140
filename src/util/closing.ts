/**
 * What was opened, closed in the reverse order: AsyncDisposableStack's
 * `defer`, which Node 20 does not have. Each close runs even when one before
 * it failed; the first failure is thrown once all have run.
 */
export class Closing implements AsyncDisposable {
  private readonly closers: (() => unknown)[] = [];
  private closed: Promise<void> | undefined;

  /** `close` runs before everything deferred earlier. */
  defer(close: () => unknown): void {
    if (this.closed) throw new Error('deferred after the close began');
    this.closers.push(close);
  }

  /** Closes all once; later calls get the same promise. */
  close(): Promise<void> {
    this.closed ??= this.closeAll();
    return this.closed;
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  private async closeAll(): Promise<void> {
    let failure: { error: unknown } | undefined;
    for (const close of this.closers.reverse()) {
      try {
        await close();
      } catch (error) {
        failure ??= { error };
      }
    }
    if (failure) throw failure.error;
  }
}
