import { createHash } from 'node:crypto';

/** The folder beside a state that keeps its thumbnails: `<state>.thumbs/` (a state's own, like its log). */
export function thumbsBeside(statePath: string): string {
  return `${statePath.replace(/\.sqlite$/, '')}.thumbs`;
}

/** A thumbnail's file in the folder: named by its output's path, which never changes its bytes. */
export function keptName(relative: string): string {
  return `${createHash('sha256').update(relative).digest('hex').slice(0, 32)}.webp`;
}
