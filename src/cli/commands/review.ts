import { startReviewServer, type ReviewServer } from '../../review/server.js';
import { isStateFileError, statePlace } from '../../library/state.js';
import { deciderOf } from '../../library/decisions.js';
import { exposure, listenError, refuseWildcard } from './local-server.js';
import { openOutputSink } from '../../sink/index.js';
import { withDefaults, type FlagValues } from '../../options/flag.js';
import { DEFAULT_PATIENCE, REVIEW_FLAGS } from '../../options/flags.js';

export type ReviewFlags = FlagValues<typeof REVIEW_FLAGS>;

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
  const { host, port } = withDefaults(flags, REVIEW_FLAGS) as Required<Pick<ReviewFlags, 'host' | 'port'>>;
  refuseWildcard(host);
  const { name, budget, statePath, outDir } = await statePlace(path, flags, cwd);
  let server: ReviewServer;
  try {
    server = await startReviewServer({
      statePath,
      outputs: await openOutputSink(outDir, { statePath, env, patience: DEFAULT_PATIENCE }),
      title: name,
      by: deciderOf(flags.by, env),
      budget,
      host,
      port,
    });
  } catch (error) {
    throw listenError(error, 'the review app', isStateFileError(error));
  }
  const banner = [
    ...exposure(host),
    `reviewing ${name} (state ${statePath}, outputs ${outDir}); decisions recorded as ${deciderOf(flags.by, env)}`,
    `open ${server.url}`,
    'keys: arrows move, a approve, r reject, u clear, z undo, n note, Enter zoom, c compare versions, ? help. Ctrl-C stops.',
  ].join('\n');
  return { server, banner, serving: { url: server.url, port: server.port, state: statePath, outDir } };
}
