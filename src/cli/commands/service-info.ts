import type { Account, MediaType, Model } from '../../api/index.js';
import { connect, type ConnectionFlags } from '../connection.js';
import { table } from '../format.js';

export interface ModelsOptions extends ConnectionFlags {
  type?: MediaType;
  json?: boolean;
}

export async function modelsCommand(opts: ModelsOptions, env: NodeJS.ProcessEnv): Promise<string> {
  const connection = await connect(opts, env);
  try {
    const types: MediaType[] = opts.type ? [opts.type] : ['image', 'video'];
    const models: Model[] = [];
    for (const type of types) models.push(...(await connection.client.listModels(type)));
    if (opts.json) return JSON.stringify(models.map((m) => m.raw), null, 2);
    return table(
      ['model', 'type', 'kind/mode', 'credits', 'durations', 'resolutions', 'aspect ratios'],
      models.map((m) => [m.id, m.type, m.kind ?? m.mode, m.creditCost, m.durations?.join(','), m.resolutions?.join(','), m.aspectRatios?.join(',')]),
    );
  } finally {
    await connection.close();
  }
}

export async function meCommand(opts: ConnectionFlags & { json?: boolean }, env: NodeJS.ProcessEnv): Promise<string> {
  const connection = await connect(opts, env);
  try {
    const me: Account = await connection.client.me();
    if (opts.json) return JSON.stringify(me.raw, null, 2);
    return table(
      ['credits', 'subscription credits', 'scopes', 'daily cap'],
      [[me.credits, me.subscriptionCredits, me.scopes.join(','), me.dailyCap]],
    );
  } finally {
    await connection.close();
  }
}
