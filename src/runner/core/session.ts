/**
 * The run's row in the state and when it began. The parts are built before
 * the run begins, so both are set once, by `begin`, and read through here
 * from then on: nothing keeps a copy taken before.
 */
export class RunSession {
  private row = 0;
  private began = 0;

  begin(id: number, at: number): void {
    this.row = id;
    this.began = at;
  }

  /** The run's id in the state (the heartbeat a cap wait writes); 0 before it begins. */
  get id(): number {
    return this.row;
  }

  /** When this run began: an attempt sent before it may have been accepted then. */
  get startedAt(): number {
    return this.began;
  }
}
