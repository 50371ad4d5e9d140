// npm run lint: no doc comment stacked on another. An editor shows only the
// one next to the code, so the other (often the old text, left behind when
// a declaration moved) misleads the reader who trusts it.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The lines (1-based) where a doc comment begins right below the end of another. */
export function stackedDocComments(text) {
  const lines = text.split('\n');
  const found = [];
  let inDoc = false;
  let docEndedAt = -2;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i].trim();
    if (!inDoc && line.startsWith('/**')) {
      if (docEndedAt === i - 1) found.push(i + 1);
      inDoc = true;
    }
    if (inDoc && line.endsWith('*/')) {
      inDoc = false;
      docEndedAt = i;
    }
  }
  return found;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const root = fileURLToPath(new URL('..', import.meta.url));
  const files = execFileSync('git', ['ls-files', 'src', 'test', 'bench', 'scripts'], { cwd: root, encoding: 'utf8' })
    .split('\n')
    .filter((f) => /\.(ts|tsx|mjs|js)$/.test(f) && !f.startsWith('test/fixtures/'));
  const stacked = files.flatMap((f) =>
    stackedDocComments(readFileSync(`${root}/${f}`, 'utf8')).map((line) => `${f}:${line}`),
  );
  for (const at of stacked) console.error(`${at}: a doc comment stacked on another (an editor shows only this one)`);
  process.exitCode = stacked.length ? 1 : 0;
}
