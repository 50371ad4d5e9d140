/** A listener of one bus; what it throws is reported, never passed to the emitter. */
export type Listener<E> = (event: E) => void;

/**
 * Typed events to any number of listeners (the live line, the log,
 * notifications, metrics, a library's caller). A listener that throws
 * cannot break the emitter or the listeners after it: what it threw goes to
 * `onListenerError` (graphile/worker's safeEmit does the same).
 */
export class EventBus<E extends { kind: string }> {
  private readonly listeners = new Set<Listener<E>>();

  constructor(private readonly onListenerError: (error: unknown, event: E) => void = () => {}) {}

  /** Hears every event from now on; returns what stops it. */
  on(listener: Listener<E>): () => void {
    // Wrapped, so the same function subscribed twice hears twice and each unsubscribes alone.
    const entry: Listener<E> = (event) => listener(event);
    this.listeners.add(entry);
    return () => {
      this.listeners.delete(entry);
    };
  }

  /** Hears the events of one kind. */
  onKind<K extends E['kind']>(kind: K, listener: Listener<Extract<E, { kind: K }>>): () => void {
    return this.on((event) => {
      if (event.kind === kind) listener(event as Extract<E, { kind: K }>);
    });
  }

  emit(event: E): void {
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch (error) {
        try {
          this.onListenerError(error, event);
        } catch {
          // Whoever is told of a listener's error must not break the emitter either.
        }
      }
    }
  }

  get listenerCount(): number {
    return this.listeners.size;
  }
}
