/** One problem found in a manifest, located for a human and for an editor. */
export interface ManifestIssue {
  file: string;
  line: number;
  column: number;
  /** The field, as a path: `items[2].prompt`, or `products.csv row 17: title`. */
  field: string;
  message: string;
}

export function formatIssue(issue: ManifestIssue): string {
  return `${issue.file}:${issue.line}:${issue.column}: ${issue.field}: ${issue.message}`;
}

/** Collects every issue; identical messages past a cap are only counted, so a bad 100,000-row file stays readable. */
export class IssueList {
  readonly issues: ManifestIssue[] = [];
  private readonly perKind = new Map<string, number>();
  suppressed = 0;

  constructor(private readonly capPerKind = 20) {}

  private readonly exact = new Set<string>();

  add(
    issue: ManifestIssue,
    kind = `${issue.field.replace(/\[\d+\]/g, '[]').replace(/row \d+/, 'row')}|${issue.message.replace(/\(row at [^)]*\)/, '')}`,
  ): void {
    // A template error in a matrix item is one mistake, however many combinations repeat it.
    const exact = formatIssue(issue);
    if (this.exact.has(exact)) return;
    this.exact.add(exact);
    const seen = this.perKind.get(kind) ?? 0;
    this.perKind.set(kind, seen + 1);
    if (seen >= this.capPerKind) this.suppressed++;
    else this.issues.push(issue);
  }

  get count(): number {
    return this.issues.length + this.suppressed;
  }
}
