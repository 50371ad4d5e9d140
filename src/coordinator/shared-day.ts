import type { Coordinator } from './postgres.js';

/** Credits of a key day taken among every process on the key, until the answer settles them. */
export interface RoomTaken {
  day: number;
  settle(day: number, charged: number): void;
}

/** The room left on a key day when other processes share the key (SharedKeyDay below; a DailyCap asks it before each submission). */
export interface KeyDayRoom {
  take(day: number, credits: number): Promise<RoomTaken | 'full' | 'unreachable'>;
}

/**
 * A key day's credits shared by every process on the key: each submission
 * reserves its credits in the coordinator before it leaves, and settles them
 * with what was charged. The strategy behind a DailyCap when processes share
 * a key, as SharedWindow is behind the pacer.
 */
export class SharedKeyDay implements KeyDayRoom {
  constructor(
    private readonly coordinator: Coordinator,
    private readonly fingerprint: string,
    private readonly cap: number,
    /** Says when the coordinator stops (false) or starts again (true) answering. */
    private readonly onCoordinator: (reachable: boolean, message: string) => void,
    /** Waits before the caller asks again, after the coordinator did not answer. */
    private readonly pause: (ms: number) => Promise<void>,
  ) {}

  async take(day: number, credits: number): Promise<RoomTaken | 'full' | 'unreachable'> {
    try {
      const id = await this.coordinator.reserveCredits(this.fingerprint, day, credits, this.cap);
      this.onCoordinator(true, 'the coordinator is reachable again');
      if (!id) return 'full';
      // Settled on the day the answer came, as this process's own day count is. If the database cannot be told,
      // the reservation's lease runs out; this process's own day count still has the charge.
      return {
        day,
        settle: (settleDay, charged) =>
          this.coordinator.settleCredits(id, this.fingerprint, settleDay, charged).catch(() => {}),
      };
    } catch (error) {
      this.onCoordinator(
        false,
        `${(error as Error).message}; submissions wait until it answers again (nothing paid is lost)`,
      );
      await this.pause(1_000);
      return 'unreachable';
    }
  }
}
