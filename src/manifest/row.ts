/** One row of a rows file, as both CSV readers and the JSONL reader give it. */
export interface Row {
  /** 1-based line in the rows file. */
  line: number;
  /** The row's columns: the parser's own record, carried to the results as it is. */
  fields: Record<string, string>;
}
