/**
 * `{{name}}` templates. A name must be known: an unknown one is an error, never
 * an empty string (a typo would otherwise produce thousands of wrong prompts).
 */
import { closestTo } from './closest.js';

/** What a template reads its names from: a map, or anything that answers the same two questions. */
export type TemplateContext = Pick<ReadonlyMap<string, string>, 'get' | 'keys'>;

const TEMPLATE = /\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}/g;

export type Rendered = { ok: true; value: string } | { ok: false; message: string };

/** A template split once into its literal text and the names between (odd places): rows render it 100,000 times. */
interface Compiled {
  parts: string[];
  /** Each name once, made when first asked for. */
  unique?: string[];
  /** The template's own text holds braces that are no {{name}}: a malformed template, whatever the values. */
  malformed: boolean;
}
const compiled = new Map<string, Compiled>();

function compiledOf(text: string): Compiled {
  let entry = compiled.get(text);
  if (!entry) {
    // split() with a capturing group keeps the names at the odd indexes.
    const parts = text.split(TEMPLATE);
    // Only the template's literal text is looked at: the values put in it are data, used as written.
    const malformed = parts.some((part, i) => i % 2 === 0 && (part.includes('{{') || part.includes('}}')));
    entry = { parts, malformed };
    if (compiled.size > 10_000) compiled.clear();
    compiled.set(text, entry);
  }
  return entry;
}

const compile = (text: string): string[] => compiledOf(text).parts;

export function render(text: string, context: TemplateContext): Rendered {
  if (!text.includes('{{')) return { ok: true, value: text };
  const { parts, malformed } = compiledOf(text);
  if (malformed) {
    return {
      ok: false,
      message: `a malformed template in ${JSON.stringify(text)}: expected {{name}} with a name of letters, digits and _`,
    };
  }
  let value = parts[0]!;
  let unknown: string[] | undefined;
  for (let i = 1; i < parts.length; i += 2) {
    const v = context.get(parts[i]!);
    if (v === undefined) (unknown ??= []).push(parts[i]!);
    value += (v ?? '') + parts[i + 1]!;
  }
  if (unknown) {
    const known = [...context.keys()].sort();
    const close = unknown.length === 1 ? closestTo(unknown[0]!, known) : undefined;
    return {
      ok: false,
      message: `unknown template name ${unknown.map((n) => `{{${n}}}`).join(', ')}; ${close ? `did you mean {{${close}}}? ` : ''}known here: ${known.length ? known.join(', ') : '(none)'}`,
    };
  }
  return { ok: true, value };
}

/** The names a template uses (from its split form, kept once per template). */
export function templateNames(text: string): string[] {
  return compile(text).filter((_, i) => i % 2 === 1);
}

/** Each name a template uses, once (asked for every row of a catalog: kept with the template). */
export function uniqueTemplateNames(text: string): readonly string[] {
  const entry = compiledOf(text);
  return (entry.unique ??= [...new Set(templateNames(text))]);
}

export function toText(value: string | number | boolean): string {
  return String(value);
}
