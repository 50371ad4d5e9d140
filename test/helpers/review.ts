import { request } from 'node:http';
import { onTestFinished } from 'vitest';
import { startReviewServer, type ReviewServer, type ReviewServerOptions } from '../../src/review/server.js';

/** A review server on port 0, closed when the test ends; its base address and token apart. */
export async function startTestReview(
  opts: ReviewServerOptions,
): Promise<ReviewServer & { base: string; token: string }> {
  const server = await startReviewServer({ liveEveryMs: 100, ...opts });
  onTestFinished(() => server.close());
  const url = new URL(server.url);
  return {
    ...server,
    close: server.close,
    base: `${url.protocol}//${url.host}`,
    token: url.searchParams.get('token')!,
  };
}

export interface RawAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** A request with exactly these headers and this path (fetch would neither send a foreign Host nor keep `..`). */
export function raw(
  base: string,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: string,
): Promise<RawAnswer> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const req = request(
      { host: url.hostname, port: url.port, method, path, headers: { host: url.host, ...headers } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }),
        );
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}
