/** One problem found in a manifest, located for a human and for an editor. */
export interface ManifestIssue {
  file: string;
  line: number;
  column: number;
  /** The field, as a path: `items[2].prompt`, or `products.csv row 17: title`. */
  field: string;
  /** What is wrong; for a row's problem it ends with the rows that have it. */
  message: string;
  /** The first row with this problem, when the item comes from rows. */
  row?: RowAt;
  /** How many rows have this same problem (with `row`). */
  rowCount?: number;
  /** Met in an item that takes the field from `defaults`: located there, once, with how many items take it. */
  inherited?: boolean;
}

/** A row of a rows file, by its line. */
export interface RowAt {
  file: string;
  line: number;
}

export function formatIssue(issue: ManifestIssue): string {
  return `${issue.file}:${issue.line}:${issue.column}: ${issue.field}: ${issue.message}`;
}

/** Rows named in a message; the others are counted. */
const ROWS_NAMED = 5;

interface Entry {
  issue: ManifestIssue;
  /** The first rows with it (at most ROWS_NAMED), and how many in all. */
  rows: RowAt[];
  rowCount: number;
  /** How many items take the faulty value from defaults. */
  heirs: number;
  order: number;
}

/**
 * Collects every issue. The same mistake met in many rows (a template typo in a 100,000-row catalog)
 * is one issue naming its first rows and their count; different messages of one kind past a cap are
 * only counted, so a bad file stays readable. Issues are read in file and line order.
 */
export class IssueList {
  private readonly entries = new Map<string, Entry>();
  private readonly perKind = new Map<string, number>();
  suppressed = 0;

  constructor(private readonly capPerKind = 20) {}

  /** An issue met in a row (`row`) joins the same issue met in other rows. */
  add(found: ManifestIssue): void {
    const { row, rowCount: _count, inherited, ...issue } = found;
    const exact = formatIssue(issue);
    const entry = this.entries.get(exact);
    if (entry) {
      if (inherited) entry.heirs++;
      if (row) {
        if (entry.rows.length < ROWS_NAMED) entry.rows.push(row);
        entry.rowCount++;
      }
      return;
    }
    const kind = `${issue.field.replace(/\[\d+\]/g, '[]').replace(/row \d+/, 'row')}|${issue.message}`;
    const seen = this.perKind.get(kind) ?? 0;
    this.perKind.set(kind, seen + 1);
    if (seen >= this.capPerKind) {
      this.suppressed++;
      return;
    }
    this.entries.set(exact, {
      issue,
      rows: row ? [row] : [],
      rowCount: row ? 1 : 0,
      heirs: inherited ? 1 : 0,
      order: this.entries.size,
    });
  }

  /** The issues shown, in the order of their files (as first met), lines and columns. */
  get issues(): ManifestIssue[] {
    const fileOrder = new Map<string, number>();
    for (const { issue } of this.entries.values())
      if (!fileOrder.has(issue.file)) fileOrder.set(issue.file, fileOrder.size);
    return [...this.entries.values()]
      .sort(
        (a, b) =>
          fileOrder.get(a.issue.file)! - fileOrder.get(b.issue.file)! ||
          a.issue.line - b.issue.line ||
          a.issue.column - b.issue.column ||
          a.order - b.order,
      )
      .map(withRows);
  }

  get count(): number {
    return this.entries.size + this.suppressed;
  }
}

function withRows({ issue, rows, rowCount, heirs }: Entry): ManifestIssue {
  if (heirs > 0)
    return {
      ...issue,
      message: `${issue.message} (${heirs === 1 ? '1 item takes' : `${heirs} items take`} it from here)`,
    };
  if (rowCount === 0) return issue;
  return { ...issue, message: `${issue.message} (${rowsText(rows, rowCount)})`, row: rows[0]!, rowCount };
}

/** "row at rows.csv:2", or "in 3 rows: rows.csv:2, 3, 4", or "in 120 rows, first rows.csv:2, 3, 4, 5, 6". */
function rowsText(rows: readonly RowAt[], count: number): string {
  if (count === 1) return `row at ${rows[0]!.file}:${rows[0]!.line}`;
  let last = '';
  const places = rows.map((r) => {
    const place = r.file === last ? String(r.line) : `${r.file}:${r.line}`;
    last = r.file;
    return place;
  });
  return count > rows.length
    ? `in ${count.toLocaleString('en-US')} rows, first ${places.join(', ')}`
    : `in ${count} rows: ${places.join(', ')}`;
}
