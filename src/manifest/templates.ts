/**
 * `{{name}}` templates. A name must be known: an unknown one is an error, never
 * an empty string (a typo would otherwise produce thousands of wrong prompts).
 */
export type TemplateContext = ReadonlyMap<string, string>;

const TEMPLATE = /\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}/g;

export type Rendered = { ok: true; value: string } | { ok: false; message: string };

export function hasTemplate(text: string): boolean {
  return text.includes('{{');
}

export function render(text: string, context: TemplateContext): Rendered {
  if (!text.includes('{{')) return { ok: true, value: text };
  const unknown: string[] = [];
  const value = text.replace(TEMPLATE, (_m, name: string) => {
    const v = context.get(name);
    if (v === undefined) unknown.push(name);
    return v ?? '';
  });
  if (unknown.length > 0) {
    const known = [...context.keys()].sort();
    return { ok: false, message: `unknown template name ${unknown.map((n) => `{{${n}}}`).join(', ')}; known here: ${known.length ? known.join(', ') : '(none)'}` };
  }
  if (value.includes('{{') || value.includes('}}')) {
    return { ok: false, message: `a malformed template in ${JSON.stringify(text)}: expected {{name}} with a name of letters, digits and _` };
  }
  return { ok: true, value };
}

/** The names a template uses. */
export function templateNames(text: string): string[] {
  return [...text.matchAll(TEMPLATE)].map((m) => m[1]!);
}

export function toText(value: string | number | boolean): string {
  return String(value);
}
