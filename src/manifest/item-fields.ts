import type { ItemContext } from './item-context.js';
import { render } from './templates.js';

const MAX_ID_LENGTH = 200;

export function checkId(id: string, fail: (message: string) => void): void {
  if (id.length > MAX_ID_LENGTH) fail(`an id is at most ${MAX_ID_LENGTH} characters; this one has ${id.length}`);
  else if (/[\u0000-\u001f\u007f]/.test(id)) fail(`an id cannot hold control characters, found ${JSON.stringify(id)}`);
  else if (id.includes('#')) fail(`an id cannot hold # (repeat adds #1, #2, …), found ${JSON.stringify(id)}`);
}

/** One item's checks while it is resolved (see checkFor). */
export interface Check {
  ok: boolean;
  fail(field: string, message: string, at?: number): void;
  text(field: string, value: string | undefined): string | undefined;
}

/** Each gate's id rendered: an empty one names nothing, and is an error. */
export function approvedOf(ids: readonly string[], ctx: ItemContext, check: Check): string[] {
  const out: string[] = [];
  for (const [i, id] of ids.entries()) {
    const r = render(id, ctx);
    if (!r.ok) check.fail('approved', r.message, i);
    else if (r.value.trim() === '')
      check.fail('approved', `expected an item's id, found ${JSON.stringify(r.value)} after templates`, i);
    else out.push(r.value);
  }
  return out;
}

/** Each tag rendered; a value with commas (a rows column "brand-a,summer") gives several tags, an empty one none. */
export function tagsOf(tags: readonly string[], ctx: ItemContext, check: Check): string[] {
  const out = new Set<string>();
  for (const [i, t] of tags.entries()) {
    let value = t;
    if (t.includes('{{')) {
      const r = render(t, ctx);
      if (!r.ok) check.fail('tags', r.message, i);
      value = r.ok ? r.value : '';
    }
    for (const tag of value.split(',')) if (tag.trim()) out.add(tag.trim());
  }
  return [...out];
}

const UNIT_MS = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** A duration as the manifest writes it (30m, 48h, 7d: the schema checked its form), in ms. */
export function durationMs(text: string): number {
  const unit = text.at(-1) as keyof typeof UNIT_MS;
  return Number(text.slice(0, -1)) * UNIT_MS[unit];
}
