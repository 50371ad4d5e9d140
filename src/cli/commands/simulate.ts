import { startSimulator } from '../../simulator/index.js';
import type { RunningSimulator, SimulatorOptions } from '../../simulator/index.js';
import { KeyPoolError, keysFromEnv } from '../../api/key-pool.js';
import { usageError } from '../../library/outcome.js';
import type { FlagValues } from '../../options/flag.js';
import type { SIMULATOR_FLAGS } from '../../options/simulator-flags.js';

/** `simulate`'s flags, as their parsers give them. */
export type SimulateFlags = FlagValues<typeof SIMULATOR_FLAGS>;

/**
 * The simulator's keys: those of the environment when it holds them
 * (GENBATCH_API_KEY, or GENBATCH_API_KEYS for a pool), so the shell that
 * runs against it needs no other export; else new ones.
 */
function keysOf(f: SimulateFlags, env: NodeJS.ProcessEnv): string[] | undefined {
  let keys: string[] | undefined;
  try {
    keys = keysFromEnv(env)?.map((k) => k.key);
  } catch (error) {
    if (error instanceof KeyPoolError) throw usageError(error.message);
    throw error;
  }
  if (keys && f.keys !== undefined && keys.length !== f.keys)
    throw usageError(
      `--keys ${f.keys}, and the environment holds ${keys.length} key${keys.length === 1 ? '' : 's'}: give as many, or unset GENBATCH_API_KEY(S) to have new ones made`,
    );
  return keys;
}

export function simulatorOptions(f: SimulateFlags, env: NodeJS.ProcessEnv = {}): SimulatorOptions {
  const given = keysOf(f, env);
  const count = given?.length ?? f.keys ?? 1;
  if ((f.scopes?.length ?? 0) > 1 && f.scopes!.length !== count)
    throw usageError(
      `--scopes was given ${f.scopes!.length} times for ${count} key${count === 1 ? '' : 's'}: give it once (every key's) or once per key`,
    );
  const beyond = f.revokeAfter?.find((r) => r.key > count);
  if (beyond) throw usageError(`--revoke-after names key ${beyond.key}, and the simulator has ${count}`);
  const options: SimulatorOptions = {
    keys: Array.from({ length: count }, (_, i) => {
      const keyScopes = f.scopes?.length === 1 ? f.scopes[0] : f.scopes?.[i];
      const revoke = f.revokeAfter?.filter((r) => r.key === i + 1).at(-1);
      return {
        label: i === 0 ? 'main' : `key${i + 1}`,
        ...(given ? { key: given[i]! } : {}),
        ...(f.dailyCap !== undefined ? { dailyCap: f.dailyCap } : {}),
        ...(keyScopes ? { scopes: keyScopes } : {}),
        ...(revoke ? { revokeAfterRequests: revoke.requests } : {}),
      };
    }),
  };
  const limits = {
    ...(f.maxPromptLength !== undefined ? { maxPromptLength: f.maxPromptLength } : {}),
    ...(f.maxImageUploadMb !== undefined ? { maxImageUploadBytes: Math.round(f.maxImageUploadMb * 1024 * 1024) } : {}),
    ...(f.maxVideoUploadMb !== undefined ? { maxVideoUploadBytes: Math.round(f.maxVideoUploadMb * 1024 * 1024) } : {}),
  };
  if (Object.keys(limits).length) options.limits = limits;
  const copy: [keyof SimulatorOptions, unknown][] = [
    ['port', f.port],
    ['host', f.host],
    ['timeScale', f.timeScale],
    ['seed', f.seed],
    ['credits', f.credits],
    ['failureRate', f.failureRate],
    ['expiryRate', f.expiryRate],
    ['moderationRate', f.moderationRate],
    ['unavailableRate', f.unavailableRate],
    ['dropRate', f.dropRate],
    ['latencyMs', f.latency],
    ['imageSeconds', f.imageSeconds],
    ['videoSeconds', f.videoSeconds],
    ['linkTtlSeconds', f.linkTtl],
    ['uploadTtlSeconds', f.uploadTtl],
    ['outages', f.outage],
    ['accountState', f.accountState],
    ['jobVisibility', f.jobVisibility],
  ];
  for (const [name, value] of copy) if (value !== undefined) (options as Record<string, unknown>)[name] = value;
  if (f.unannounced) options.announce = false;
  return options;
}

export async function simulateCommand(
  flags: SimulateFlags,
  env: NodeJS.ProcessEnv = {},
): Promise<{ simulator: RunningSimulator; banner: string }> {
  const simulator = await startSimulator(simulatorOptions(flags, env));
  const tokens = Object.values(simulator.keys);
  // A key taken from the environment may be a real one: it is never printed.
  const yours = keysFromEnv(env) !== undefined;
  const banner = [
    'genbatch simulator: a stand-in for the service, on loopback. No credits are real.',
    `base URL: ${simulator.baseUrl}`,
    ...(yours
      ? [
          `API ${tokens.length > 1 ? 'keys' : 'key'}: the environment's (${tokens.length > 1 ? 'GENBATCH_API_KEYS' : 'GENBATCH_API_KEY'})`,
        ]
      : tokens.length > 1
        ? [`API keys: ${tokens.length}, one account`]
        : [`API key:  ${simulator.apiKey}`]),
    `time scale: ${flags.timeScale ?? 1}x   ledger: ${simulator.baseUrl.replace(/\/v1$/, '')}/__sim/ledger`,
    '',
    'Use it from another shell:',
    `  export GENBATCH_BASE_URL=${simulator.baseUrl}`,
    ...(yours
      ? []
      : [
          tokens.length > 1
            ? `  export GENBATCH_API_KEYS=${tokens.join(',')}`
            : `  export GENBATCH_API_KEY=${simulator.apiKey}`,
        ]),
    ...((flags.timeScale ?? 1) !== 1 && !flags.unannounced
      ? [
          `  genbatch run <manifest>    (paces to this simulator's time, x${flags.timeScale}, which its /me says; --time-scale overrides)`,
        ]
      : []),
    '',
    'Ctrl-C stops it.',
  ].join('\n');
  return { simulator, banner };
}
