import { Option, type Command } from 'commander';

/**
 * One flag, declared once: its syntax, what it does, how its value is read
 * and its default. The help text says the default from here, and the command
 * takes it from here (`withDefaults`), so the two cannot drift apart.
 */
export interface FlagSpec<T = unknown> {
  readonly flags: string;
  readonly help: string;
  /** Reads the flag's value (and, for a repeatable flag, what it collected before). */
  readonly parse?: (value: string, previous?: never) => T;
  /** Filled in when the flag is not given. */
  readonly default?: T;
  /** How the help says a default that depends on other flags, which the command works out itself. */
  readonly defaultText?: string;
}

/** A flag's declaration, its syntax kept as a literal: the value's type is read from it (see FlagValues). */
export const flag = <const S extends FlagSpec>(s: S): S => s;

/** A flag's value: what its parser gives, else the texts of a list, the text of a flag that takes one, else a switch. */
type ValueOf<S> = S extends { parse: (...args: never[]) => infer T }
  ? T
  : S extends { flags: `${string}...>${string}` }
    ? string[]
    : S extends { flags: `${string}<${string}` }
      ? string
      : boolean;

/** A command's flags as it receives them, in camelCase: each one left out is undefined (or its default, after `withDefaults`). */
export type FlagValues<F> = { -readonly [K in keyof F]?: ValueOf<F[K]> };

/** The help's "(default …)": the value as a user would type it, or the words of a default worked out elsewhere. */
function helpOf(s: FlagSpec): string {
  if (s.defaultText) return `${s.help} (default ${s.defaultText})`;
  if (s.default === undefined) return s.help;
  return `${s.help} (default ${String(s.default)})`;
}

/** Adds the flags to a command; their defaults are not given to commander, so a command can tell a flag given from one left out. */
export function addFlags(cmd: Command, specs: Record<string, FlagSpec>): Command {
  for (const s of Object.values(specs)) {
    const option = new Option(s.flags, helpOf(s));
    if (s.parse) option.argParser(s.parse as (value: string, previous: unknown) => unknown);
    cmd.addOption(option);
  }
  return cmd;
}

/** The flags as given, with each one left out set to its declared default. */
export function withDefaults<T extends object>(given: T, specs: Record<string, FlagSpec>): T {
  const filled: Record<string, unknown> = { ...(given as Record<string, unknown>) };
  for (const [name, s] of Object.entries(specs))
    if (filled[name] === undefined && s.default !== undefined) filled[name] = s.default;
  return filled as T;
}
