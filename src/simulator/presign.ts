import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * Presigned object-storage links: the path and an expiry time, signed. A link
 * works until it expires; a new GET of the job issues a new one.
 */
export class Presigner {
  private readonly secret = randomBytes(32);

  constructor(private readonly storageBase: () => string) {}

  sign(path: string, expiresAt: number, params: Record<string, string> = {}): string {
    const query = new URLSearchParams({ ...params, expires: String(expiresAt) });
    query.set('signature', this.mac(path, query));
    return `${this.storageBase()}${path}?${query.toString()}`;
  }

  /** 'ok', or why the link is refused. */
  verify(path: string, query: URLSearchParams, now: number): 'ok' | 'bad-signature' | 'expired' {
    const given = query.get('signature') ?? '';
    const rest = new URLSearchParams(query);
    rest.delete('signature');
    const expected = this.mac(path, rest);
    const a = Buffer.from(given, 'utf8');
    const b = Buffer.from(expected, 'utf8');
    if (a.length !== b.length || !timingSafeEqual(a, b)) return 'bad-signature';
    const expires = Number(query.get('expires'));
    return Number.isFinite(expires) && now < expires ? 'ok' : 'expired';
  }

  private mac(path: string, query: URLSearchParams): string {
    const sorted = [...query.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return createHmac('sha256', this.secret).update(path).update('\n').update(JSON.stringify(sorted)).digest('hex');
  }
}
