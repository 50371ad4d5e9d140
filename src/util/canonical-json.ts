/**
 * JSON with object keys sorted, so equal values always hash equally. Keys
 * named `omitKey` are left out at any depth, as a JSON.stringify replacer
 * returning undefined for them would: one pass instead of a stringify, a parse
 * and a sort (a third of the time to write a 100,000-row catalog's items).
 */
export function canonicalJson(value: unknown, omitKey?: string): string {
  return JSON.stringify(sortKeys(value, omitKey));
}

function sortKeys(value: unknown, omitKey: string | undefined): unknown {
  // What JSON.stringify would write for it, then sorted.
  if (value !== null && typeof value === 'object' && typeof (value as { toJSON?: unknown }).toJSON === 'function')
    value = (value as { toJSON(): unknown }).toJSON();
  if (Array.isArray(value)) return value.map((v) => sortKeys(v, omitKey));
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort()) {
      if (key !== omitKey) out[key] = sortKeys((value as Record<string, unknown>)[key], omitKey);
    }
    return out;
  }
  return value;
}
