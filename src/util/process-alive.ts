import { readFileSync } from 'node:fs';

/** Whether a process of this machine runs: a zombie (killed, not yet reaped) holds nothing, so it does not. */
export function processAlive(pid: number): boolean {
  try {
    // A killed holder nobody has reaped yet is a zombie: it answers kill(0) but holds nothing.
    if (
      readFileSync(`/proc/${pid}/stat`, 'utf8')
        .replace(/^.*\) /s, '')
        .startsWith('Z')
    )
      return false;
  } catch {
    // no /proc entry (gone, or not Linux): kill(0) decides
  }
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
