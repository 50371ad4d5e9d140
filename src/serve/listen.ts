import type { Server } from 'node:http';

/** Listens, or rejects with the reason (EADDRINUSE, EACCES, EADDRNOTAVAIL). */
export function listen(server: Server, host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
}
