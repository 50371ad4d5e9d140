import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { onTestFinished } from 'vitest';

/** How the proxy answers one request: passed to the bucket, or one of a real bucket's faults. */
export type ProxyWay = 'pass' | 'slow-down' | 'internal-error' | 'silent' | 'reset';

export interface BucketProxy {
  /** The SDK's environment pointed at the proxy (the bucket's own credentials). */
  env: Record<string, string>;
  /** Decides each request's fate (by method and path); 'pass' by default. */
  decide: (method: string, path: string) => ProxyWay;
  /** Refuses every connection for `ms` (nothing listens), then listens again on the same port. */
  refuseFor(ms: number): Promise<void>;
  /** Requests seen, by how they were answered. */
  seen: Record<ProxyWay | 'refused', number>;
}

const S3_ERROR = (code: string, message: string) =>
  `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${message}</Message><RequestId>proxy</RequestId></Error>`;

/**
 * A loopback HTTP proxy in front of a test bucket that gives the faults of a
 * real one on demand: 503 SlowDown and 500 InternalError as S3 words them, a
 * request read and never answered, a connection reset mid-request, and a
 * spell with nothing listening. Closed when the test ends.
 */
export async function startBucketProxy(bucketEnv: Record<string, string>): Promise<BucketProxy> {
  const target = new URL(bucketEnv.AWS_ENDPOINT_URL!);
  const sockets = new Set<Socket>();
  const seen: BucketProxy['seen'] = { pass: 0, 'slow-down': 0, 'internal-error': 0, silent: 0, reset: 0, refused: 0 };
  const proxy: BucketProxy = {
    env: { ...bucketEnv },
    decide: () => 'pass',
    refuseFor: async (ms) => {
      seen.refused++;
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
      });
      await new Promise((r) => setTimeout(r, ms));
      await listen(port);
    },
    seen,
  };
  const answer = (req: IncomingMessage, res: ServerResponse) => {
    const way = proxy.decide(req.method ?? 'GET', decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname));
    seen[way]++;
    if (way === 'reset') {
      req.socket.destroy();
      return;
    }
    if (way === 'silent') {
      // Read, never answered: only the client's own timeout ends it.
      req.resume();
      return;
    }
    if (way === 'slow-down' || way === 'internal-error') {
      req.resume();
      req.on('end', () => {
        res.writeHead(way === 'slow-down' ? 503 : 500, { 'content-type': 'application/xml' });
        res.end(
          way === 'slow-down'
            ? S3_ERROR('SlowDown', 'Please reduce your request rate.')
            : S3_ERROR('InternalError', 'We encountered an internal error. Please try again.'),
        );
      });
      return;
    }
    const forward = request(
      { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers },
      (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
      },
    );
    forward.on('error', () => req.socket.destroy());
    req.pipe(forward);
  };
  const server = createServer(answer);
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  const listen = (at: number) =>
    new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(at, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
  await listen(0);
  const port = (server.address() as AddressInfo).port;
  proxy.env.AWS_ENDPOINT_URL = `http://127.0.0.1:${port}`;
  onTestFinished(async () => {
    for (const s of sockets) s.destroy();
    await new Promise((r) => server.close(r));
  });
  return proxy;
}
