import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { ApiClient, TransportError } from '../../src/api/index.js';
import { fileSystemError } from '../../src/download/download.js';
import { GenbatchError } from '../../src/util/errors.js';

/** A port nothing listens on: taken, then let go. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe("genbatch's errors", () => {
  it('derive from one root and keep what caused them: a refused connection, a full disk', async () => {
    const client = new ApiClient({ baseUrl: `http://127.0.0.1:${await closedPort()}/v1`, apiKey: 'gb_secret' });
    try {
      // A base URL that never answered is said as such, and keeps the refusal underneath.
      const first = await client.me().catch((e: unknown) => e);
      expect(first).toBeInstanceOf(GenbatchError);
      expect((first as Error).name).toBe('NotTheServiceError');
      const error = (first as Error).cause;
      expect(error).toBeInstanceOf(TransportError);
      expect(error).toBeInstanceOf(GenbatchError);
      expect((error as Error).name).toBe('TransportError');
      expect(((error as Error).cause as NodeJS.ErrnoException).code).toBe('ECONNREFUSED');
      expect((error as Error).message).not.toContain('gb_secret');
      expect((first as Error).message).not.toContain('gb_secret');
    } finally {
      await client.close();
    }
    const full = Object.assign(new Error('ENOSPC: no space left on device'), { code: 'ENOSPC' });
    const disk = fileSystemError(full, 'shots/a-1.png');
    expect(disk).toBeInstanceOf(GenbatchError);
    expect(disk).toMatchObject({ code: 'ENOSPC', refreshable: false, diskCode: 'ENOSPC' });
    expect(disk.cause).toBe(full);
  });
});
