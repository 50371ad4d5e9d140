export const REDACTED = '[REDACTED]';

/**
 * Replaces every occurrence of the given secrets in a string. Used on anything
 * that came from outside (server messages, URLs) before it reaches an error or log.
 */
export function scrubSecrets(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) {
    if (secret.length >= 4 && out.includes(secret)) out = out.split(secret).join(REDACTED);
  }
  return out;
}

/** Deep copy of a JSON-like value with secrets scrubbed from every string. */
export function scrubDeep<T>(value: T, secrets: readonly string[]): T {
  if (typeof value === 'string') return scrubSecrets(value, secrets) as T;
  if (Array.isArray(value)) return value.map((v) => scrubDeep(v, secrets)) as T;
  if (value !== null && typeof value === 'object') {
    if (value instanceof Error) return value;
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = scrubDeep(v, secrets);
    return out as T;
  }
  return value;
}
