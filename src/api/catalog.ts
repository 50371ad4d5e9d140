import type { ApiClient } from './client.js';
import type { MediaType, Model } from './types.js';

/** The models of the types a manifest uses, by id. */
export class Catalog {
  constructor(readonly models: ReadonlyMap<string, Model>) {}

  /** `timeoutMs` bounds each request (a run's start-up asks again rather than wait for an answer that may never come). */
  static async fetch(client: ApiClient, types: Iterable<MediaType>, timeoutMs?: number): Promise<Catalog> {
    const models = new Map<string, Model>();
    // Asked together: one round trip, not one per type.
    const kinds = [...new Set(types)];
    const lists = await Promise.all(kinds.map((type) => client.listModels(type, timeoutMs)));
    for (const [i, type] of kinds.entries()) for (const model of lists[i]!) models.set(`${type}:${model.id}`, model);
    return new Catalog(models);
  }

  get(type: MediaType, id: string): Model | undefined {
    return this.models.get(`${type}:${id}`);
  }

  ids(type: MediaType): string[] {
    return [...this.models.values()].filter((m) => m.type === type).map((m) => m.id);
  }
}
