import type { Account, MediaType, Model } from '../../api/index.js';
import { untilFirstAnswer } from '../../api/until-answered.js';
import { connect } from '../../library/connection.js';
import type { FlagValues } from '../../options/flag.js';
import type { ME_FLAGS, MODELS_FLAGS } from '../../options/flags.js';
import { catalogVideoPrice } from '../../estimate/prices.js';
import { localDateTime, num, table } from '../format.js';

const optional = (x: number | undefined) => (x === undefined ? '' : num(x));

/** An image model's price per image; a video model's range over its resolutions and durations (the catalog's own fields, read as tolerantly as the estimate reads them). */
function creditsOf(m: Model): string {
  if (m.creditCost !== undefined) return num(m.creditCost);
  const prices = (m.resolutions ?? [])
    .flatMap((r) => (m.durations ?? []).map((d) => catalogVideoPrice(m.raw, r, d)))
    .filter((p): p is number => p !== undefined);
  if (prices.length === 0) return '';
  const [low, high] = [Math.min(...prices), Math.max(...prices)];
  return low === high ? num(low) : `${num(low)}–${num(high)}`;
}

export async function modelsCommand(options: FlagValues<typeof MODELS_FLAGS>, env: NodeJS.ProcessEnv): Promise<string> {
  const connection = await connect(options, env);
  try {
    const types: MediaType[] = options.type ? [options.type] : ['image', 'video'];
    const models: Model[] = [];
    for (const type of types) models.push(...(await untilFirstAnswer(() => connection.client.listModels(type))));
    if (options.json)
      return JSON.stringify(
        models.map((m) => m.raw),
        null,
        2,
      );
    return table(
      ['model', 'type', 'kind/mode', 'credits', 'durations', 'resolutions', 'aspect ratios'],
      models.map((m) => [
        m.id,
        m.type,
        m.kind ?? m.mode,
        creditsOf(m),
        m.durations?.join(','),
        m.resolutions?.join(','),
        m.aspectRatios?.join(','),
      ]),
    );
  } finally {
    await connection.close();
  }
}

export async function meCommand(options: FlagValues<typeof ME_FLAGS>, env: NodeJS.ProcessEnv): Promise<string> {
  const connection = await connect(options, env);
  try {
    const each: { fingerprint: string; me: Account }[] = [];
    for (const { fingerprint, client } of connection.keys)
      each.push({ fingerprint, me: await untilFirstAnswer(() => client.me()) });
    const pool = each.length > 1;
    // One key: the service's answer as it is. A pool: each key's answer under its fingerprint.
    if (options.json)
      return JSON.stringify(
        pool ? each.map((k) => ({ fingerprint: k.fingerprint, ...(k.me.raw as object) })) : each[0]!.me.raw,
        null,
        2,
      );
    return table(
      [...(pool ? ['key'] : []), 'credits', 'subscription credits', 'scopes', 'daily cap', 'used today', 'resets'],
      each.map(({ fingerprint, me }) => [
        ...(pool ? [fingerprint] : []),
        num(me.credits),
        optional(me.subscriptionCredits),
        me.scopes.join(','),
        optional(me.dailyCap),
        optional(me.usedToday),
        me.resetAt !== undefined ? localDateTime(me.resetAt) : '',
      ]),
    );
  } finally {
    await connection.close();
  }
}
