import { Parser } from 'csv-parse';
import type { Row } from './row.js';

/**
 * csv-parse's stream with each record tagged with its line as it is parsed.
 * (Its on_record option would build two info objects per record for that one number.)
 */
export class LineTaggedParser extends Parser {
  override push(record: unknown, encoding?: BufferEncoding): boolean {
    if (record === null) return super.push(null, encoding);
    return super.push({ line: this.info.lines, fields: record as Record<string, string> } satisfies Row);
  }
}
