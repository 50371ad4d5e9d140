/** A plain text table: columns padded to their widest cell. */
export function table(headers: string[], rows: (string | number | undefined)[][]): string {
  const cells = [headers, ...rows.map((r) => r.map((c) => (c === undefined ? '' : String(c))))];
  const widths = headers.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  return cells.map((r) => r.map((c, i) => (c ?? '').padEnd(widths[i]!)).join('  ').trimEnd()).join('\n');
}

/** A count with its noun, singular or plural, and thousands separators: "1 item", "2,460 items". */
export function count(n: number, noun: string, plural = `${noun}s`): string {
  return `${n.toLocaleString('en-US')} ${n === 1 ? noun : plural}`;
}

/** One number format everywhere: thousands separators. */
export function num(n: number): string {
  return n.toLocaleString('en-US');
}

/** A time of day in the local zone, with the zone named: "14:05 CET". */
export function localTime(ms: number): string {
  return new Intl.DateTimeFormat('en-GB', { hour: '2-digit', minute: '2-digit', timeZoneName: 'short' }).format(new Date(ms));
}

/** A day and time in the local zone, with the zone named: "24 Nov, 00:00 UTC". */
export function localDateTime(ms: number): string {
  return new Intl.DateTimeFormat('en-GB', { day: 'numeric', month: 'short', hour: '2-digit', minute: '2-digit', timeZoneName: 'short' }).format(new Date(ms));
}
