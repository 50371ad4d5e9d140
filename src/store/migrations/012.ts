/** Migration 12. */
export const sql = `
  -- The API key an attempt was sent with, by its fingerprint (never the key): its resends and polls use that key
  -- alone, since the service may scope an idempotency key to its API key (another key's resend could pay twice).
  ALTER TABLE attempts ADD COLUMN key_fp TEXT;
  `;
