/** A file input: a local file, or the output of another item. */
export type InputRef = { kind: 'file'; path: string; display: string } | { kind: 'item'; id: string };

export interface ItemOrigin {
  file: string;
  line: number;
  column: number;
  /** Index in the manifest's `items`. */
  itemIndex: number;
  row?: { file: string; line: number };
}

/** One job-to-be of a manifest, after defaults, matrix, rows, repeat and templates. */
export interface ResolvedItem {
  id: string;
  type: 'image' | 'video';
  model: string;
  prompt: string;
  aspectRatio?: string;
  resolution?: string;
  duration?: string;
  inputs?: InputRef[];
  image?: InputRef;
  referenceImages?: InputRef[];
  video?: InputRef;
  source?: string;
  /** Labels: status and the results count items and credits per tag. Not content: changing them changes no key. */
  tags?: string[];
  /**
   * Its gates: the items whose current version a person must approve before it is sent, each with the field that
   * named it (`approved[0]`, or an input given `approved: true`). Not content: a gate added changes no key.
   */
  gates?: { id: string; field: string }[];
  /**
   * As a gate: how long (ms, the service's time) its made version waits for a person before `onTimeout` is decided
   * for it. Not content.
   */
  approval?: { timeoutMs: number; onTimeout: 'skip' | 'approve' };
  /** Ready items go higher first, then in manifest order (0 when not given). Not content: changing it changes no key. */
  priority?: number;
  /** The item's own template values: its row's columns and its matrix values (not the manifest's vars). Carried to the results; not part of its content hash. */
  values?: Record<string, string>;
  /** An image's copy plan: its web copies, their marking, its checks. Not content: changing it changes no key. Named `finish` in the specs states already hold. */
  finish?: CopyPlan;
  where: ItemOrigin;
}

/** A web copy of an image output (see the manifest's `derivatives`). */
export interface WebCopySpec {
  format: 'webp' | 'jpeg' | 'avif' | 'png';
  width?: number;
  height?: number;
  quality?: number;
  enlarge?: boolean;
}

/** What is checked of each image output once it is verified: a failed check rejects it, as a reviewer would. */
export interface OutputChecks {
  /** Flat: almost no variation in any channel. */
  blank?: boolean;
  /** The size expected, within 2%. */
  size?: { width: number; height: number };
}

/** What is made and checked of each image output once it is verified. */
export interface CopyPlan {
  derivatives: WebCopySpec[];
  checks?: OutputChecks;
  /** Each copy carries XMP saying it is AI-made (IPTC DigitalSourceType), with the model, job and item. */
  mark: boolean;
}

/** What is stored per item: the resolved item without its manifest position. */
export type ItemSpec = Omit<ResolvedItem, 'where'>;

/** The items an item waits for, with the field that names each. */
export function dependenciesOf(item: ItemSpec): { id: string; field: string; needs: 'image' | 'video' }[] {
  const deps: { id: string; field: string; needs: 'image' | 'video' }[] = [];
  if (!item.inputs && !item.image && !item.referenceImages && !item.video && !item.source) return deps;
  const add = (ref: InputRef | undefined, field: string, needs: 'image' | 'video') => {
    if (ref?.kind === 'item') deps.push({ id: ref.id, field, needs });
  };
  for (const [i, r] of (item.inputs ?? []).entries()) add(r, `inputs[${i}]`, 'image');
  add(item.image, 'image', 'image');
  for (const [i, r] of (item.referenceImages ?? []).entries()) add(r, `referenceImages[${i}]`, 'image');
  add(item.video, 'video', 'video');
  if (item.source) deps.push({ id: item.source, field: 'source', needs: 'video' });
  return deps;
}

/** The items an item waits for a decision on: its gates (see ResolvedItem.gates). */
export function gatesOf(item: Pick<ResolvedItem, 'gates'>): readonly string[] {
  return item.gates ? [...new Set(item.gates.map((g) => g.id))] : NO_GATES;
}
const NO_GATES: readonly string[] = Object.freeze([]);

/** The item's local file inputs, in the order its fields name them (most catalog rows have none, and are passed over without an array). */
export function fileInputsOf(item: ItemSpec): readonly FileInput[] {
  if (
    item.inputs === undefined &&
    item.image === undefined &&
    item.referenceImages === undefined &&
    item.video === undefined
  )
    return NO_FILES;
  return [...(item.inputs ?? []), item.image, ...(item.referenceImages ?? []), item.video].filter(
    (ref): ref is FileInput => ref?.kind === 'file',
  );
}

type FileInput = Extract<InputRef, { kind: 'file' }>;
const NO_FILES: readonly FileInput[] = Object.freeze([]);
