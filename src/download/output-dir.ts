import { randomBytes } from 'node:crypto';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * Creates the output dir and writes and removes a small file in it, so a dir
 * that cannot take outputs is found before anything is paid for. Returns the
 * problem (with the file system's code), or undefined when the dir is usable.
 */
export async function probeOutputDir(dir: string): Promise<{ code: string; message: string } | undefined> {
  const probe = join(dir, `.genbatch-probe-${randomBytes(4).toString('hex')}`);
  try {
    await mkdir(dir, { recursive: true });
    await writeFile(probe, 'genbatch checks that outputs can be written here\n', { flush: true });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'WRITE_FAILED';
    return { code, message: `cannot write to the output dir ${dir} (${code})` };
  } finally {
    await rm(probe, { force: true }).catch(() => undefined);
  }
  return undefined;
}
