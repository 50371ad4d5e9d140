/** A plain text table: columns padded to their widest cell. */
export function table(headers: string[], rows: (string | number | undefined)[][]): string {
  const cells = [headers, ...rows.map((r) => r.map((c) => (c === undefined ? '' : String(c))))];
  const widths = headers.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  return cells.map((r) => r.map((c, i) => (c ?? '').padEnd(widths[i]!)).join('  ').trimEnd()).join('\n');
}

// Formatters made once: toLocaleString builds a new one on every call (a quarter of a millisecond each, on the live line's every update).
let numbers: Intl.NumberFormat | undefined;
let times: Intl.DateTimeFormat | undefined;
let dateTimes: Intl.DateTimeFormat | undefined;

/** A count with its noun, singular or plural, and thousands separators: "1 item", "2,460 items". */
export function count(n: number, noun: string, plural = `${noun}s`): string {
  return `${num(n)} ${n === 1 ? noun : plural}`;
}

/** One number format everywhere: thousands separators. */
export function num(n: number): string {
  // Whole numbers without Intl: its first use costs about 20 ms, before a run's first submission.
  if (Number.isSafeInteger(n)) return `${n < 0 ? '-' : ''}${String(Math.abs(n)).replace(/\B(?=(\d{3})+$)/g, ',')}`;
  return (numbers ??= new Intl.NumberFormat('en-US')).format(n);
}

/** A time of day in the local zone, with the zone named: "14:05 CET". */
export function localTime(ms: number): string {
  return (times ??= new Intl.DateTimeFormat('en-GB', { hour: '2-digit', minute: '2-digit', timeZoneName: 'short' })).format(new Date(ms));
}

/** A day and time in the local zone, with the zone named: "24 Nov, 00:00 UTC". */
export function localDateTime(ms: number): string {
  return (dateTimes ??= new Intl.DateTimeFormat('en-GB', { day: 'numeric', month: 'short', hour: '2-digit', minute: '2-digit', timeZoneName: 'short' })).format(new Date(ms));
}

export interface Paint {
  red(text: string): string;
  green(text: string): string;
  yellow(text: string): string;
  bold(text: string): string;
}

const plain: Paint = { red: (t) => t, green: (t) => t, yellow: (t) => t, bold: (t) => t };
const sgr = (open: number, close: number) => (t: string) => `\x1b[${open}m${t}\x1b[${close}m`;
const ansi: Paint = { red: sgr(31, 39), green: sgr(32, 39), yellow: sgr(33, 39), bold: sgr(1, 22) };

/**
 * Colour for a stream: on a terminal only, never with NO_COLOR (no-color.org)
 * or --no-color (which sets it), and on a pipe when FORCE_COLOR asks for it.
 */
export function paintFor(stream: { isTTY?: boolean }, env: NodeJS.ProcessEnv = process.env): Paint {
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return plain;
  if (env.FORCE_COLOR !== undefined && env.FORCE_COLOR !== '' && env.FORCE_COLOR !== '0') return ansi;
  return stream.isTTY && env.TERM !== 'dumb' ? ansi : plain;
}
