import { manifestJsonSchema } from './json-schema.js';

type Node = {
  type?: string | string[];
  enum?: unknown[];
  const?: unknown;
  description?: string;
  properties?: Record<string, Node>;
  required?: string[];
  items?: Node;
  anyOf?: Node[];
  oneOf?: Node[];
  additionalProperties?: Node | boolean;
  minimum?: number;
  maximum?: number;
};

/** One example per field, as a manifest writes it: a field without one fails the test that keeps this page current. */
const EXAMPLES: Record<string, string> = {
  // By the field's path where one name means two things.
  'output.name': '"{{id}}-{{n}}.{{ext}}"',
  'items[].id': '"mug-{{color}}"',
  'items[].approved': '["draft-{{sku}}"]',
  $schema: '"../schemas/manifest.schema.json"',
  version: '1',
  id: 'catalog-spring-2026',
  name: 'catalog',
  defaults: '{ model: studio-xl, aspectRatio: "4:5" }',
  derivatives: '[{ format: webp, width: 1600 }]',
  checks: '{ blank: true, size: 2048x2560 }',
  mark: 'false',
  output: '{ dir: s3://catalog/spring, name: "{{id}}-{{n}}.{{ext}}" }',
  budget: '{ maxCredits: 5000, perTag: { brand-a: 2000 } }',
  vars: '{ brand: Acme }',
  prices: '{ motion-2: { 720p: { "5": 40 } } }',
  items: '[{ id: mug, prompt: "A mug" }]',
  type: 'video',
  model: 'studio-xl',
  prompt: '"A {{color}} mug for {{brand}}"',
  aspectRatio: '"16:9"',
  resolution: '2K',
  duration: '"5"',
  inputs: '[in/mug.png, { from: mug-red }]',
  from: 'mug-red',
  approved: 'true',
  approval: '{ timeout: 48h, onTimeout: skip }',
  timeout: '48h',
  onTimeout: 'approve',
  image: 'frames/first.png',
  referenceImages: '[ref/a.png, ref/b.png]',
  video: 'clips/intro.mp4',
  source: 'intro-clip',
  tags: '[spring, "{{collection}}"]',
  priority: '"{{rush}}"',
  format: 'webp',
  width: '1600',
  height: '2000',
  quality: '80',
  enlarge: 'true',
  blank: 'true',
  size: '2048x2560',
  dir: 's3://catalog/spring',
  maxCredits: '5000',
  perTag: '{ brand-a: 2000 }',
  matrix: '{ color: [red, blue] }',
  rows: 'products.csv',
  repeat: '3',
};

/** A field's type as a reader wants it: its values when it has a few, else its JSON type, `list of` its items'. */
function typeOf(n: Node): string {
  if (n.const !== undefined) return JSON.stringify(n.const);
  if (n.enum) return `one of ${n.enum.map((v) => String(v)).join(', ')}`;
  const alts = n.anyOf ?? n.oneOf;
  if (alts) return [...new Set(alts.map(typeOf))].join(' or ');
  if (n.type === 'array') return `list of ${n.items ? typeOf(n.items) : 'values'}`;
  if (n.type === 'object' && !n.properties && typeof n.additionalProperties === 'object')
    return `map of ${typeOf(n.additionalProperties)}`;
  if (n.type === 'object') return 'mapping';
  if (Array.isArray(n.type)) return n.type.join(' or ');
  const range = n.minimum !== undefined || n.maximum !== undefined ? ` (${n.minimum ?? ''}–${n.maximum ?? ''})` : '';
  return `${n.type ?? 'any'}${range}`;
}

/** The description of a field, or of the first alternative that has one. */
function describe(n: Node): string {
  return n.description ?? (n.anyOf ?? n.oneOf ?? []).find((a) => a.description)?.description ?? '';
}

/** A mapping's fields, with their nested mappings' fields (`output.dir`), or the object a list holds. */
function rows(node: Node, path: string, out: string[][], stopAt: (name: string) => boolean): void {
  const target = node.type === 'array' && node.items ? node.items : node;
  const props = target.properties ?? (target.anyOf ?? []).find((a) => a.properties)?.properties;
  if (!props) return;
  for (const [name, child] of Object.entries(props)) {
    const field = path ? `${path}.${name}` : name;
    const required = target.required?.includes(name) ? 'yes' : '';
    out.push([`\`${field}\``, typeOf(child), required, describe(child), EXAMPLES[field] ?? EXAMPLES[name] ?? '']);
    const alts = child.anyOf ?? child.oneOf ?? [];
    const list = child.type === 'array' || alts.some((a) => a.type === 'array');
    if (!stopAt(name))
      rows(list ? (alts.find((a) => a.type === 'array') ?? child) : child, list ? `${field}[]` : field, out, stopAt);
  }
}

const cell = (text: string) => text.replaceAll('|', '\\|').replaceAll('\n', ' ');
const table = (head: string[], body: string[][]) =>
  [
    `| ${head.join(' | ')} |`,
    `| ${head.map(() => '---').join(' | ')} |`,
    ...body.map((r) => `| ${r.map(cell).join(' | ')} |`),
  ].join('\n');

/** docs/manifest.md: every field of a manifest, with its type, whether it is required, what it does and an example. */
export function manifestReferenceText(): string {
  const schema = manifestJsonSchema() as Node;
  const props = schema.properties!;
  const head = ['field', 'type', 'required', 'what it is (and its default)', 'example'];
  const top: string[][] = [];
  const copies = new Set(['derivatives', 'checks', 'mark']);
  // The item's fields are listed once (under items); defaults takes the same; the copies' fields once, below.
  rows(
    { ...schema, properties: Object.fromEntries(Object.entries(props).filter(([k]) => !copies.has(k))) },
    '',
    top,
    (n) => ['defaults', 'items'].includes(n),
  );
  const item: string[][] = [];
  rows(props.items!, 'items[]', item, (n) => copies.has(n));
  const copy: string[][] = [];
  rows(
    { type: 'object', properties: Object.fromEntries([...copies].map((k) => [k, props[k]!])) },
    '',
    copy,
    () => false,
  );
  return `${[
    '# Manifest fields',
    '',
    'Generated from the zod schema (`src/manifest/schema.ts`) by `npm run schema`, and checked current by a test. The',
    'same schema is `schemas/manifest.schema.json`, which editors use to complete and check manifests.',
    '',
    '## The top level',
    '',
    table(head, top),
    '',
    '## An item',
    '',
    "`defaults:` takes the same fields but `id`, `matrix`, `rows` and `repeat`; an item's own value wins over",
    "`defaults:`, which wins over the top level's copies and checks. Strings may use templates: `{{var}}`, a",
    'matrix value, a rows column, `{{id}}`, `{{model}}`, `{{type}}`.',
    '',
    table(head, item),
    '',
    '## Web copies and checks of image outputs',
    '',
    'At the top level, under `defaults:` or on an item.',
    '',
    table(head, copy),
  ].join('\n')}\n`;
}

/** Field names the page lists without an example. */
export function fieldsWithoutExample(): string[] {
  return [...manifestReferenceText().matchAll(/^\| `([^`]+)` \|.*\| {2}\|$/gm)].map((m) => m[1]!);
}
