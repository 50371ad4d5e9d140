import type { ItemShape } from '../store/index.js';
import { fileInputsOf, type ResolvedItem } from './types.js';

/**
 * The items' shapes as `Items.shapes()` reads them from the state, counted as
 * the items come: the service's catalog judges a manifest by these, and a
 * resume checks them without reading every item's JSON (0.3 s at 100,000).
 */
export class ShapeTally {
  private readonly byKey = new Map<string, ItemShape>();
  private last: ItemShape | undefined;

  add(item: ResolvedItem): void {
    const input: ItemShape['input'] =
      item.image !== undefined
        ? 'image'
        : item.referenceImages !== undefined
          ? 'referenceImages'
          : item.video !== undefined
            ? 'video'
            : item.source !== undefined
              ? 'source'
              : null;
    const edits = item.inputs !== undefined ? 1 : 0;
    // A catalog's rows mostly share the last row's shape: compared field by field, with no key made.
    const last = this.last;
    if (
      last &&
      last.type === item.type &&
      last.model === item.model &&
      last.aspectRatio === (item.aspectRatio ?? null) &&
      last.resolution === (item.resolution ?? null) &&
      last.duration === (item.duration ?? null) &&
      last.edits === edits &&
      last.input === input
    ) {
      last.n++;
      return;
    }
    // A string key, not the shape's JSON.
    const key = `${item.type}\u0000${item.model}\u0000${item.aspectRatio}\u0000${item.resolution}\u0000${item.duration}\u0000${edits}\u0000${input}`;
    let seen = this.byKey.get(key);
    if (seen) seen.n++;
    else
      this.byKey.set(
        key,
        (seen = {
          type: item.type,
          model: item.model,
          aspectRatio: item.aspectRatio ?? null,
          resolution: item.resolution ?? null,
          duration: item.duration ?? null,
          edits,
          input,
          n: 1,
        }),
      );
    this.last = seen;
  }

  all(): ItemShape[] {
    return [...this.byKey.values()];
  }
}

/** What a run needs of its items before it writes them: their shapes and the local files they take as inputs. */
export class ItemsTally {
  private readonly tally = new ShapeTally();
  readonly inputFiles = new Set<string>();

  add(item: ResolvedItem): void {
    this.tally.add(item);
    for (const ref of fileInputsOf(item)) this.inputFiles.add(ref.path);
  }

  shapes(): ItemShape[] {
    return this.tally.all();
  }
}
