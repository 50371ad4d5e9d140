// Types of chaos.mjs for the suite, which runs a few of its seeds.
export interface ChaosResult {
  seed: number;
  plan: unknown;
  faults: Record<string, number>;
  violations: string[];
  /** The longest time, in ms, from a run's last fault to its end. */
  recovery: number;
  lives: { signal?: string; code: number | null; killed: boolean; ms: number; bucket: boolean }[];
}
export function planFor(
  seed: number,
  canMount: boolean,
): {
  outages: { mode: string }[];
  signals: { signal: string }[];
  storm?: unknown;
  serverErrors: number;
  dropRate: number;
  cutDownloads: number;
  expiredLinks: number;
  failureRate: number;
  unavailableRate: number;
  unreachableMinutes?: number;
  /** Half the seeds publish to a faulty bucket, with web copies and checks, and are killed during publication. */
  bucket?: {
    slowDown: number;
    resets: number;
    tornReads: number;
    spells: { afterPuts: number; ms: number; mode: 'refuse' | 'silent' }[];
    signals: { signal: string; afterPuts: number; delayMs: number }[];
    flat: number;
  };
};
export function chaosRun(
  seed: number,
  opts?: { canMount?: boolean; say?: (line: string) => void },
): Promise<ChaosResult>;
export function chaosBench(): Promise<boolean>;
