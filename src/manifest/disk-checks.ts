import { access, constants, stat } from 'node:fs/promises';
import { RowsFiles } from './rows.js';

/**
 * What an expansion reads from disk, kept: rows files' bytes, and the checks
 * of input files (there, readable, the media their field takes). Expanding
 * again with the same reads gives the same items; each file is checked once
 * however many items name it.
 */
export class ExpansionReads {
  private readonly fileChecks = new Map<string, Promise<string | undefined>>();
  private readonly mediaChecks = new Map<string, Promise<string | undefined>>();

  constructor(readonly rowsFiles = new RowsFiles()) {}

  /** What keeps the file from being read (no such file, not a file, not readable), if anything. */
  file(abs: string): Promise<string | undefined> {
    let check = this.fileChecks.get(abs);
    if (!check) {
      check = (async () => {
        try {
          if (!(await stat(abs)).isFile()) return 'not a file';
          await access(abs, constants.R_OK);
          return undefined;
        } catch (error) {
          const code = (error as NodeJS.ErrnoException).code;
          return code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'not readable' : `cannot read (${code})`;
        }
      })();
      this.fileChecks.set(abs, check);
    }
    return check;
  }

  /** The file's bytes must be the kind of media the field takes (a renamed video is not an image). */
  media(abs: string, expected: 'image' | 'video'): Promise<string | undefined> {
    const key = `${expected}\n${abs}`;
    let check = this.mediaChecks.get(key);
    if (!check) {
      // Loaded for the first input file only: a prompt-only catalog starts without it.
      check = import('file-type')
        .then(({ fileTypeFromFile }) => fileTypeFromFile(abs))
        .then(
          (type) => {
            const kind = type?.mime.split('/')[0];
            if (kind === expected) return undefined;
            return `expected ${expected === 'image' ? 'an image' : 'a video'} file, found ${type ? `${type.mime} content` : 'content that is neither an image nor a video'}`;
          },
          () => 'cannot read the file',
        );
      this.mediaChecks.set(key, check);
    }
    return check;
  }
}
