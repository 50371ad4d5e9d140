/**
 * Node warnings seen by the tests: those of this process, and those the CLI
 * processes the tests start print on stderr. The setup file fails the test
 * file that produced any, so no new warning slips into a user's terminal.
 */
const seen: string[] = ((globalThis as { __genbatchWarnings?: string[] }).__genbatchWarnings ??= []);

const NODE_WARNING = /^\(node:\d+\) (?:\[[A-Z0-9_]+\] )?\w*Warning: .*$/gm;

export function recordWarning(text: string): void {
  seen.push(text);
}

/** Records every Node warning line in a child's stderr. */
export function recordChildWarnings(stderr: string, args: readonly string[]): void {
  for (const line of stderr.match(NODE_WARNING) ?? []) seen.push(`genbatch ${args.join(' ')}: ${line}`);
}

export function takeWarnings(): string[] {
  return seen.splice(0);
}
