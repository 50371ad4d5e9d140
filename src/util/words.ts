/** Numbers and times as every message says them, the library's and the command line's alike. */

// Made once: toLocaleString builds a new formatter on every call (a quarter of a millisecond each, on the live line's every update).
let numbers: Intl.NumberFormat | undefined;

/** A count with its noun, singular or plural, and thousands separators: "1 item", "2,460 items". */
export function count(n: number, noun: string, plural = `${noun}s`): string {
  return `${num(n)} ${n === 1 ? noun : plural}`;
}

/** Ids as a message names them: quoted, the first `shown` and how many more ("a", "b", … and 4,980 more). */
export function idList(ids: readonly string[], shown = 20): string {
  const head = ids.slice(0, shown).map((id) => JSON.stringify(id.length > 200 ? `${id.slice(0, 197)}...` : id));
  return ids.length > shown ? `${head.join(', ')} and ${num(ids.length - shown)} more` : head.join(', ');
}

/** One number format everywhere: thousands separators. */
export function num(n: number): string {
  // Whole numbers without Intl: its first use costs about 20 ms, before a run's first submission.
  if (Number.isSafeInteger(n)) return `${n < 0 ? '-' : ''}${String(Math.abs(n)).replace(/\B(?=(\d{3})+$)/g, ',')}`;
  return (numbers ??= new Intl.NumberFormat('en-US')).format(n);
}

// Times of day without Intl: its first date format costs 20-25 ms, paid on a run's first line, amid its first window's submissions.
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const twoDigits = (n: number) => String(n).padStart(2, '0');

/** The local zone at that date as its offset from UTC: "UTC", "UTC+1", "UTC-3:30" (unambiguous, unlike most abbreviations). */
function zoneOf(date: Date): string {
  const offset = -date.getTimezoneOffset();
  if (offset === 0) return 'UTC';
  const minutes = Math.abs(offset) % 60;
  return `UTC${offset > 0 ? '+' : '-'}${Math.floor(Math.abs(offset) / 60)}${minutes ? `:${twoDigits(minutes)}` : ''}`;
}

/** A time of day in the local zone, with the zone: "14:05 UTC+1". */
export function localTime(ms: number): string {
  const date = new Date(ms);
  return `${twoDigits(date.getHours())}:${twoDigits(date.getMinutes())} ${zoneOf(date)}`;
}

/** A day and time in the local zone, with the zone: "24 Nov, 00:00 UTC". */
export function localDateTime(ms: number): string {
  const date = new Date(ms);
  return `${date.getDate()} ${MONTHS[date.getMonth()]}, ${localTime(ms)}`;
}
