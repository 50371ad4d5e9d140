/**
 * The upper bounds (seconds) of the job run time histogram: images take
 * about 50 s and videos about 5.5 min at the service, a rehearsal's far
 * less. Migration 23 files each ended job under the first bound it fits
 * (frozen there, and a test holds the two together); changing them takes a
 * migration of its own.
 */
export const JOB_SECONDS_BUCKETS = [1, 2.5, 5, 10, 20, 30, 45, 60, 90, 120, 180, 300, 450, 600, 900, 1800] as const;
