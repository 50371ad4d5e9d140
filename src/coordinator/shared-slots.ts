import type { Coordinator } from './postgres.js';

/** Between two asks for a slot that other processes hold. */
const ASK_EVERY_MS = 100;

/**
 * Holds one of the key's in-flight slots of `type` in the coordinator, shared
 * by every process, until the release it returns is called (the job ended).
 * `force`: the item's job runs already (a resumed run), so its slot is taken
 * whatever the count, and a database that cannot be reached never keeps a
 * paid job from being polled. Undefined when `signal` aborts first.
 */
export async function holdSharedSlot(
  coordinator: Coordinator,
  slot: { keyFp: string; type: 'image' | 'video'; cap: number; item: string; force: boolean },
  signal: AbortSignal,
  onUnreachable: (message: string) => void,
): Promise<(() => void) | undefined> {
  const release = () => void coordinator.releaseSlot(slot.keyFp, slot.type, slot.item).catch(() => {});
  for (let said = false; !signal.aborted; ) {
    try {
      if (await coordinator.acquireSlot(slot.keyFp, slot.type, slot.cap, slot.item, slot.force)) return release;
    } catch (error) {
      if (slot.force) return () => {};
      if (!said)
        onUnreachable(`${(error as Error).message}; submissions wait until it answers again (nothing paid is lost)`);
      said = true;
    }
    await new Promise((r) => setTimeout(r, ASK_EVERY_MS));
  }
  return undefined;
}
