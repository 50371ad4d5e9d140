import { readFile } from 'node:fs/promises';
import { basename, dirname, extname, relative, resolve } from 'node:path';
import { LineCounter, isMap, isScalar, isSeq, parseDocument, type Document, type Node } from 'yaml';
import type { IssueList } from './issues.js';

/** A manifest file with its parsed document and the means to point at any field in it. */
export class ManifestSource {
  private constructor(
    /** As given, for messages. */
    readonly file: string,
    readonly absPath: string,
    readonly text: string,
    readonly doc: Document,
    private readonly lines: LineCounter,
  ) {}

  get dir(): string {
    return dirname(this.absPath);
  }

  /** The file name without its extension: the manifest's default name. */
  get stem(): string {
    return basename(this.absPath, extname(this.absPath));
  }

  static async read(path: string, cwd: string, issues: IssueList): Promise<ManifestSource | undefined> {
    const absPath = resolve(cwd, path);
    const file = relative(cwd, absPath) || path;
    let text: string;
    try {
      text = await readFile(absPath, 'utf8');
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      const reason =
        code === 'ENOENT'
          ? `no such file (looked for ${absPath})`
          : code === 'EACCES'
            ? 'not readable (permission denied)'
            : code === 'EISDIR'
              ? 'a folder, not a file'
              : (code ?? String(error));
      issues.add({ file, line: 1, column: 1, field: '(file)', message: `cannot read the manifest: ${reason}` });
      return undefined;
    }
    const lines = new LineCounter();
    // JSON is YAML 1.2 flow syntax, so one parser gives positions for both.
    const doc = parseDocument(text, {
      lineCounter: lines,
      uniqueKeys: true,
      prettyErrors: false,
      strict: true,
      logLevel: 'error',
    });
    const source = new ManifestSource(file, absPath, text, doc, lines);
    // A tab that indents a line makes the parser see the lines after it wrongly too: its own error, with the fix, is the
    // one said (the others are noise that goes once the tab does).
    const tabs = doc.errors.filter((e) => e.code === 'TAB_AS_INDENT');
    // A tab after leading spaces is not one the parser names: it sees misaligned keys. Said as the tab it is.
    const hidden =
      tabs.length === 0 && doc.errors.length > 0 ? tabIndentedAt(text, lines.linePos(doc.errors[0]!.pos[0]).line) : [];
    for (const line of hidden) issues.add({ file, line, column: 1, field: '(syntax)', message: TAB_HINT });
    for (const error of tabs.length ? tabs : hidden.length ? [] : doc.errors) {
      const pos = lines.linePos(error.pos[0]);
      const message = error.code === 'TAB_AS_INDENT' ? TAB_HINT : error.message.split('\n')[0]!;
      issues.add({ file, line: pos.line, column: pos.col, field: '(syntax)', message });
    }
    return doc.errors.length > 0 ? undefined : source;
  }

  /** Line and column of a field: its key when it exists, else the nearest enclosing node. */
  locate(path: readonly (string | number)[]): { line: number; column: number } {
    let node: unknown = this.doc.contents;
    let offset = (node as Node | null)?.range?.[0] ?? 0;
    for (const segment of path) {
      if (isMap(node)) {
        const pair = node.items.find((p) => isScalar(p.key) && String(p.key.value) === String(segment));
        if (!pair) break;
        offset = (pair.key as Node).range?.[0] ?? offset;
        node = pair.value;
      } else if (isSeq(node) && typeof segment === 'number' && node.items[segment]) {
        node = node.items[segment];
        offset = (node as Node).range?.[0] ?? offset;
      } else break;
    }
    const pos = this.lines.linePos(offset);
    return { line: pos.line, column: pos.col };
  }

  /**
   * Where an item's field is written when the item does not write it: `defaults`
   * (`['defaults', field]`), so a mistake there is said where it is, once.
   */
  inheritedFrom(path: readonly [string, number, string]): [string, string] | undefined {
    if (this.doc.hasIn(path)) return undefined;
    const field = path[2];
    return this.doc.hasIn(['defaults', field]) ? ['defaults', field] : undefined;
  }

  /** A hint when YAML read an unquoted `{{name}}` as a mapping. */
  templateHint(path: readonly (string | number)[]): string {
    const node = this.doc.getIn(path, true) as Node | undefined;
    if (node && isMap(node) && node.flow && node.range && this.text.slice(node.range[0], node.range[0] + 2) === '{{') {
      const snippet = this.text.slice(node.range[0], node.range[1]).split('\n')[0];
      return ` (YAML read the unquoted template as a mapping: quote it, e.g. "${snippet}")`;
    }
    return '';
  }
}

const TAB_HINT = 'a tab indents this line; YAML indents with spaces only: replace the tab with spaces';

/**
 * The line whose indentation holds a tab (after spaces too) where the parser
 * stumbled first: that tab is the mistake, and what the parser says after it
 * is noise. A tab elsewhere (inside a block of text, where it is content) is
 * not blamed.
 */
function tabIndentedAt(text: string, failedAt: number): number[] {
  const line = text.split('\n')[failedAt - 1] ?? '';
  return /^ *\t[ \t]*\S/.test(line) ? [failedAt] : [];
}

export function fieldPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const seg of path) out += typeof seg === 'number' ? `[${seg}]` : out ? `.${String(seg)}` : String(seg);
  return out || '(manifest)';
}
