/**
 * What the simulator saw and did, for tests and users to audit a run: every
 * request, charge, refund, upload and download. Keys appear by label only.
 */
export type LedgerEvent =
  // key: the label of the account's key the request presented (refused or not); null for none of its keys.
  | {
      kind: 'request';
      at: number;
      key: string | null;
      method: string;
      path: string;
      status: number;
      code?: string;
      idempotencyKey?: string;
      injected?: boolean;
    }
  | {
      kind: 'charge';
      at: number;
      key: string;
      jobId: string;
      idempotencyKey: string;
      credits: number;
      prompt: string;
      model: string;
    }
  | { kind: 'refund'; at: number; key: string; jobId: string; credits: number; status: string }
  | { kind: 'replay'; at: number; key: string; jobId: string; idempotencyKey: string }
  | { kind: 'dropped-response'; at: number; key: string; jobId: string; idempotencyKey: string }
  | { kind: 'upload-grant'; at: number; key: string; uploadKey: string; size: number; contentType: string }
  | { kind: 'upload-put'; at: number; uploadKey: string; status: number; bytes: number }
  | { kind: 'download'; at: number; jobId: string; index: number; status: number; bytes: number };

export class Ledger {
  readonly events: LedgerEvent[] = [];
  private readonly watchers = new Set<(event: LedgerEvent) => void>();

  record(event: LedgerEvent): void {
    this.events.push(event);
    for (const watcher of this.watchers) watcher(event);
  }

  /** Calls `watcher` with each event as it is recorded (tests act on what the service sees); returns the unsubscribe. */
  watch(watcher: (event: LedgerEvent) => void): () => void {
    this.watchers.add(watcher);
    return () => this.watchers.delete(watcher);
  }

  of<K extends LedgerEvent['kind']>(kind: K): Extract<LedgerEvent, { kind: K }>[] {
    return this.events.filter((e): e is Extract<LedgerEvent, { kind: K }> => e.kind === kind);
  }

  /** Responses with this HTTP status (e.g. 429) the service sent. */
  countStatus(status: number): number {
    return this.of('request').filter((e) => e.status === status).length;
  }

  totals(): { charged: number; refunded: number; jobs: number; requests: number } {
    const charges = this.of('charge');
    return {
      charged: charges.reduce((s, e) => s + e.credits, 0),
      refunded: this.of('refund').reduce((s, e) => s + e.credits, 0),
      jobs: charges.length,
      requests: this.of('request').length,
    };
  }
}
