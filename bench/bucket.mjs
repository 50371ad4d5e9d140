// A bucket to rehearse on, for the benches and the suite alike: s3rver (pure Node, from npm) with S3's
// all-or-nothing PUT, and a fault proxy in front of it that gives the faults of a real bucket on demand.
import { createHash } from 'node:crypto';
import { createWriteStream, mkdtempSync, rmSync } from 'node:fs';
import { mkdir, rename, rm } from 'node:fs/promises';
import { createServer, request } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import S3rver from 's3rver';

/**
 * S3 stores an object all at once, when its whole body has arrived. s3rver
 * writes it in place as the body streams, so a body cut off (a run killed
 * mid-upload) leaves a partial object with no metadata under the name, and
 * a request that never ends; and it answers a PUT before the file is fully
 * written. Here each body is written whole beside the object, its metadata
 * next, then it is renamed into place: the object appears whole or not at
 * all, as in S3. Also counts the PUTs under way, for a caller to wait on.
 */
export function keepPutsWhole(store, begun) {
  let underWay = 0;
  let written = 0;
  const waiters = [];
  store.putObject = async (object) => {
    underWay++;
    for (const l of begun) l(object.key);
    try {
      const path = store.getResourcePath(object.bucket, object.key, 'object');
      const partial = `${path}.${++written}.partial`;
      await mkdir(dirname(path), { recursive: true });
      const hash = createHash('md5');
      let size = 0;
      const body = Buffer.isBuffer(object.content) ? Readable.from([object.content]) : object.content;
      try {
        await pipeline(
          body,
          async function* (chunks) {
            for await (const chunk of chunks) {
              hash.update(chunk);
              size += chunk.length;
              yield chunk;
            }
          },
          createWriteStream(partial),
        );
      } catch (error) {
        await rm(partial, { force: true });
        throw error;
      }
      const md5 = hash.digest('hex');
      await store.putMetadata(object.bucket, object.key, object.metadata, md5);
      await rename(partial, path);
      return { size, md5 };
    } finally {
      underWay--;
      if (underWay === 0) for (const w of waiters.splice(0)) w();
    }
  };
  return () => (underWay === 0 ? Promise.resolve() : new Promise((resolve) => waiters.push(resolve)));
}

/** s3rver on a loopback port 0 with a bucket `catalog`, whole PUTs: its SDK environment, what it created, and close. */
export async function startWholeBucket() {
  const directory = mkdtempSync(join(tmpdir(), 'genbatch-s3-'));
  const server = new S3rver({
    port: 0,
    address: '127.0.0.1',
    silent: true,
    directory,
    configureBuckets: [{ name: 'catalog' }],
  });
  const begun = [];
  const putsSettled = keepPutsWhole(server.store, begun);
  const { port } = await server.run();
  const created = [];
  const listeners = [];
  server.on('event', (event) => {
    for (const r of event.Records) {
      if (!r.eventName.startsWith('ObjectCreated')) continue;
      const key = decodeURIComponent(r.s3.object.key);
      created.push(key);
      for (const l of listeners) l(key);
    }
  });
  return {
    env: {
      AWS_ENDPOINT_URL: `http://127.0.0.1:${port}`,
      AWS_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: 'S3RVER',
      AWS_SECRET_ACCESS_KEY: 'S3RVER',
    },
    created,
    onCreated: (l) => listeners.push(l),
    onPutBegun: (l) => begun.push(l),
    putsSettled,
    connections: () =>
      new Promise((resolve, reject) =>
        server.httpServer.getConnections((error, n) => (error ? reject(error) : resolve(n))),
      ),
    close: async () => {
      await server.close();
      rmSync(directory, { recursive: true, force: true });
    },
  };
}

const S3_ERROR = (code, message) =>
  `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${message}</Message><RequestId>proxy</RequestId></Error>`;

/**
 * A free loopback port below the kernel's ephemeral range (32768 and up here): a server that stops listening for a
 * spell of refusal must find its port still free when it listens again. One from port 0 is ephemeral, and another
 * process binding port 0 meanwhile (the bench's other worker) could be handed it: its run would then talk to
 * another seed's bucket or service, and restore another seed's state.
 */
export async function privatePort() {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    const free = await new Promise((resolve) => {
      const probe = createNetServer();
      probe.once('error', () => resolve(false));
      probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
    });
    if (free) return port;
  }
}

/**
 * A loopback HTTP proxy in front of a test bucket that gives the faults of a
 * real one on demand, by request (`decide(method, path)`): 503 SlowDown and
 * 500 InternalError as S3 words them, a request read and never answered
 * (`silent`), a connection reset before it is forwarded (`reset`), a body
 * torn halfway through its answer (`torn`); and `refuseFor(ms)`, a spell
 * with nothing listening on its port.
 */
export async function startFaultProxy(bucketEnv) {
  const target = new URL(bucketEnv.AWS_ENDPOINT_URL);
  const sockets = new Set();
  const seen = { pass: 0, 'slow-down': 0, 'internal-error': 0, silent: 0, reset: 0, torn: 0, refused: 0 };
  let port = 0;
  let held = 0;
  let refusing;
  let refuseUntil = 0;
  let closed = false;
  const proxy = {
    heldOpen: () => held,
    env: { ...bucketEnv },
    decide: () => 'pass',
    seen,
    refuseFor: async (ms) => {
      seen.refused++;
      // A spell already under way is lengthened, not started twice.
      refuseUntil = Math.max(refuseUntil, Date.now() + ms);
      if (refusing) return refusing;
      refusing = (async () => {
        await new Promise((resolve) => {
          server.close(() => resolve());
          for (const s of sockets) s.destroy();
        });
        while (Date.now() < refuseUntil) await new Promise((r) => setTimeout(r, refuseUntil - Date.now()));
        if (!closed) await listen(port);
        refusing = undefined;
      })();
      return refusing;
    },
    close: async () => {
      closed = true;
      for (const s of sockets) s.destroy();
      if (server.listening) await new Promise((r) => server.close(r));
    },
  };
  const answer = (req, res) => {
    const way = proxy.decide(req.method ?? 'GET', decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname));
    seen[way]++;
    if (way === 'reset') return req.socket.destroy();
    // Read, never answered: only the client's own timeout ends it (counted while its connection is open).
    if (way === 'silent') {
      held++;
      req.socket.once('close', () => held--);
      return req.resume();
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
        if (way !== 'torn') return up.pipe(res);
        // Half the answer's body, then the connection is gone.
        const length = Number(up.headers['content-length'] ?? 0);
        let sent = 0;
        up.on('data', (chunk) => {
          if (sent >= length / 2) return;
          sent += chunk.length;
          res.write(chunk.subarray(0, Math.max(1, Math.ceil(length / 2) - (sent - chunk.length))));
          if (sent >= length / 2) req.socket.destroy();
        });
        up.on('end', () => req.socket.destroy());
      },
    );
    forward.on('error', () => req.socket.destroy());
    // A client gone mid-request (killed, or its request abandoned) takes the forwarded request with it: left open,
    // the bucket would wait for the rest of its body for good, and never close.
    res.on('close', () => {
      if (!res.writableFinished) forward.destroy();
    });
    req.pipe(forward);
  };
  const server = createServer(answer);
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  const listen = (at) =>
    new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(at, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
  for (;;) {
    try {
      await listen(await privatePort());
      break;
    } catch {
      // Taken between the look and the listen: another.
    }
  }
  port = server.address().port;
  proxy.env.AWS_ENDPOINT_URL = `http://127.0.0.1:${port}`;
  return proxy;
}
