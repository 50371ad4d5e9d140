import type { Catalog } from '../api/catalog.js';
import { IssueList } from './issues.js';
import { closestTo } from './closest.js';
import { type ManifestSource, fieldPath } from './source.js';
import type { ItemShape } from '../store/index.js';
import type { InputRef, ResolvedItem } from './types.js';

const MODE_FOR_INPUT = {
  image: ['image-to-video'],
  referenceImages: ['reference-to-video'],
  video: ['video-extend', 'video-edit'],
  source: ['video-extend', 'video-edit'],
} as const;

/** The service's view of a manifest: models, kinds, modes, allowed values, and the key's scopes. */
export function checkAgainstService(
  items: readonly ResolvedItem[],
  source: ManifestSource,
  catalog: Catalog,
  scopes: readonly string[],
  issues: IssueList,
): void {
  const report = (item: ResolvedItem, field: string, message: string) => {
    const own: [string, number, string] = ['items', item.where.itemIndex, field];
    // A value taken from defaults is wrong where it is written: said there, once, with how many items take it.
    const inherited = source.inheritedFrom(own);
    const path = inherited ?? own;
    const at = { file: source.file, ...source.locate(path), field: fieldPath(path), message };
    issues.add(inherited ? { ...at, inherited: true } : { ...at, row: item.where.row });
  };
  const firstOfType = new Map<string, ResolvedItem>();
  const countOfType = new Map<string, number>();
  for (const item of items) {
    if (!firstOfType.has(item.type)) firstOfType.set(item.type, item);
    countOfType.set(item.type, (countOfType.get(item.type) ?? 0) + 1);
    const model = catalog.get(item.type, item.model);
    if (!model) {
      const ids = catalog.ids(item.type);
      const close = closestTo(item.model, ids);
      report(
        item,
        'model',
        `unknown ${item.type} model ${JSON.stringify(item.model)}${close ? `; did you mean ${close}?` : ''} (the catalog has ${ids.join(', ') || 'none'})`,
      );
      continue;
    }
    const allowed = (field: 'aspectRatio' | 'resolution' | 'duration', list: string[] | undefined) => {
      const value = item[field];
      if (value !== undefined && list && list.length > 0 && !list.includes(value)) {
        report(
          item,
          field,
          `${item.model} does not take ${field} ${JSON.stringify(value)}; allowed: ${list.join(', ')}`,
        );
      }
    };
    allowed('aspectRatio', model.aspectRatios);
    allowed('resolution', model.resolutions);
    if (item.type === 'image') {
      const wants = item.inputs ? 'edit' : 'generate';
      if (model.kind && model.kind !== wants) {
        report(
          item,
          item.inputs ? 'inputs' : 'model',
          item.inputs
            ? `${item.model} generates from text; editing inputs needs a model of kind edit`
            : `${item.model} is an edit model; it needs inputs to edit`,
        );
      }
      continue;
    }
    allowed('duration', model.durations);
    const given = (['image', 'referenceImages', 'video', 'source'] as const).find((f) => item[f] !== undefined);
    if (given && model.mode && !(MODE_FOR_INPUT[given] as readonly string[]).includes(model.mode)) {
      report(
        item,
        given,
        `${item.model} is a ${model.mode} model; ${given} fits ${MODE_FOR_INPUT[given].join(' or ')}`,
      );
    }
  }
  for (const [type, item] of firstOfType) {
    if (!scopes.includes(type))
      report(
        item,
        'type',
        `the key lacks the ${type} scope, which the manifest's ${countOfType.get(type) === 1 ? `1 ${type} item needs` : `${countOfType.get(type)} ${type} items need`}; create a key with it`,
      );
  }
}

/** The same checks for the shapes of items a state holds: the number of problems (located by a full load, when there are any). */
export function shapeProblems(
  shapes: readonly ItemShape[],
  source: ManifestSource,
  catalog: Catalog,
  scopes: readonly string[],
): number {
  const where = { file: source.file, line: 1, column: 1, itemIndex: 0 };
  const items = shapes.flatMap((s): ResolvedItem[] => {
    const item: ResolvedItem = { id: '', type: s.type, model: s.model, prompt: '', where };
    if (s.aspectRatio !== null) item.aspectRatio = s.aspectRatio;
    if (s.resolution !== null) item.resolution = s.resolution;
    if (s.duration !== null) item.duration = s.duration;
    if (s.edits) item.inputs = [];
    const ref: InputRef = { kind: 'item', id: '' };
    if (s.input === 'image') item.image = ref;
    else if (s.input === 'referenceImages') item.referenceImages = [ref];
    else if (s.input === 'video') item.video = ref;
    else if (s.input === 'source') item.source = '';
    return [item];
  });
  const issues = new IssueList();
  checkAgainstService(items, source, catalog, scopes, issues);
  return issues.count;
}
