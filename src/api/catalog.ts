import type { ApiClient } from './client.js';
import type { MediaType, Model } from './types.js';

/** The models of the types a manifest uses, by id. */
export class Catalog {
  constructor(readonly models: ReadonlyMap<string, Model>) {}

  static async fetch(client: ApiClient, types: Iterable<MediaType>): Promise<Catalog> {
    const models = new Map<string, Model>();
    for (const type of new Set(types)) {
      for (const model of await client.listModels(type)) models.set(`${type}:${model.id}`, model);
    }
    return new Catalog(models);
  }

  get(type: MediaType, id: string): Model | undefined {
    return this.models.get(`${type}:${id}`);
  }

  ids(type: MediaType): string[] {
    return [...this.models.values()].filter((m) => m.type === type).map((m) => m.id);
  }
}
