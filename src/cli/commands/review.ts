import { locate } from '../../manifest/load-valid.js';
import { startReviewServer, type ReviewServer } from '../../review/server.js';
import { StateFileError } from '../../store/index.js';
import { existingStatePathFor, openStateReadOnly } from '../../store/state-path.js';
import { EXIT, ExitError, usageError } from '../../library/outcome.js';
import { openOutputSink } from '../../sink/index.js';
import { SERVER_FLAGS, withDefaults } from '../../options/flags.js';

export interface ReviewFlags {
  state?: string;
  simulate?: boolean;
  port?: number;
  host?: string;
}

/** What `review --json` prints: where the app is served, for a script that opens it. */
export interface ReviewServing {
  url: string;
  port: number;
  state: string;
  outDir: string;
}

/** Starts the review app on the manifest's state: the server, and the lines to print. */
export async function reviewCommand(
  path: string,
  flags: ReviewFlags,
  cwd: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ server: ReviewServer; banner: string; serving: ReviewServing }> {
  const { host, port } = withDefaults(flags, SERVER_FLAGS) as Required<Pick<ReviewFlags, 'host' | 'port'>>;
  // A wildcard address has no name a browser would send as Host: the Host check would refuse every request.
  if (host === '0.0.0.0' || host === '::' || host === '[::]')
    throw usageError(`--host ${host} listens on every address; give the one address to serve on (default 127.0.0.1)`);
  const manifest = await locate(path, cwd);
  const statePath = existingStatePathFor(manifest, flags, cwd);
  const store = openStateReadOnly(statePath);
  const outDir = store.runs.all().at(-1)?.out_dir ?? manifest.outputDir;
  store.close();
  let server: ReviewServer;
  try {
    server = await startReviewServer({
      statePath,
      outputs: await openOutputSink(outDir, { statePath, env }),
      title: manifest.name,
      budget: manifest.maxCredits ?? null,
      host,
      port,
    });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (error instanceof StateFileError || code === 'EADDRINUSE' || code === 'EADDRNOTAVAIL' || code === 'EACCES')
      throw new ExitError(EXIT.environment, `cannot start the review app: ${(error as Error).message}`, undefined, {
        cause: error,
      });
    throw error;
  }
  const loopback = ['127.0.0.1', '::1', 'localhost'].includes(host);
  const banner = [
    ...(loopback
      ? []
      : [
          `warning: ${host} is not loopback: other machines can reach this server over plain HTTP; the token in its URL is all that guards it`,
        ]),
    `reviewing ${manifest.name} (state ${statePath}, outputs ${outDir})`,
    `open ${server.url}`,
    'keys: arrows move, a approve, r reject, u clear, z undo, n note, Enter zoom, c compare versions, ? help. Ctrl-C stops.',
  ].join('\n');
  return { server, banner, serving: { url: server.url, port: server.port, state: statePath, outDir } };
}
