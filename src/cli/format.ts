/** A plain text table: columns padded to their widest cell. */
export function table(headers: string[], rows: (string | number | undefined)[][]): string {
  const cells = [headers, ...rows.map((r) => r.map((c) => (c === undefined ? '' : String(c))))];
  const widths = headers.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  return cells
    .map((r) =>
      r
        .map((c, i) => (c ?? '').padEnd(widths[i]!))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

export { count, localDateTime, localTime, num } from '../util/words.js';

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
