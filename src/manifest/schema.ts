import * as z from 'zod';

/**
 * The manifest, as users write it (product.md). Objects are strict: a
 * misspelt field is an error, not silently ignored.
 */
const scalar = z.union([z.string(), z.number(), z.boolean()]);
const varName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'a name of letters, digits and _');

export const fileInput = z.union([
  z.string().min(1).describe('a file path, relative to the manifest'),
  z.strictObject({
    from: z.string().min(1).describe('the id of an earlier item whose output is used'),
    approved: z
      .boolean()
      .optional()
      .describe("true: this item waits until a person approved that item's current version (a gate)"),
  }),
]);

/** A web copy of each image output: made once it is verified, beside it, the original untouched. */
export const webCopySchema = z.strictObject({
  format: z.enum(['webp', 'jpeg', 'avif', 'png']).describe("the copy's format"),
  width: z.int().min(1).max(16384).optional().describe('the largest width, in pixels (the ratio is kept)'),
  height: z.int().min(1).max(16384).optional().describe('the largest height, in pixels (the ratio is kept)'),
  quality: z.int().min(1).max(100).optional().describe("1-100 (webp, jpeg, avif; the format's default otherwise)"),
  enlarge: z.boolean().optional().describe('make it larger than the original when asked to (never by default)'),
});

/** What finishes each image output: its web copies, and whether they are marked as AI-made. */
const copyFields = {
  derivatives: z
    .array(webCopySchema)
    .min(1)
    .optional()
    .describe('web copies of each image output, named beside it (hero-1.1600w.webp); images only'),
  checks: z
    .strictObject({
      blank: z.boolean().optional().describe('reject an output that is flat (almost no variation)'),
      size: z
        .string()
        .regex(/^[1-9]\d*x[1-9]\d*$/, 'expected WxH, such as "1600x2000"')
        .optional()
        .describe('reject an output whose size is not WxH (within 2%)'),
    })
    .optional()
    .describe('reject broken image outputs automatically, with the reason, before anyone reviews them; images only'),
  mark: z
    .boolean()
    .optional()
    .describe(
      'mark each web copy as AI-made in its XMP (IPTC DigitalSourceType trainedAlgorithmicMedia); default true',
    ),
};

/** What happens to a gate no person decided: after `timeout` (in the service's time), the decision is taken for it. */
export const approvalSchema = z.strictObject({
  timeout: z
    .string()
    .regex(/^\d+(\.\d+)?(s|m|h|d)$/, 'a duration such as 30m, 48h or 7d')
    .describe("how long a gate's made version waits for a person, from when it was made (s, m, h or d)"),
  onTimeout: z
    .enum(['skip', 'approve'])
    .describe('then: skip what it gates (a rejection, taken by the timeout), or approve it'),
});

const itemFields = {
  type: z.enum(['image', 'video']).optional().describe('image (default) or video'),
  model: z.string().min(1).optional().describe('a model id from `genbatch models`'),
  prompt: z.string().min(1).optional().describe('what to generate; templates allowed'),
  aspectRatio: z.string().min(1).optional().describe('<w>:<h>, e.g. "4:5"'),
  resolution: z.string().min(1).optional().describe('e.g. 2K for images, 720p for videos'),
  duration: z
    .union([z.number().positive(), z.string().min(1)])
    .optional()
    .describe('video seconds, one of the model’s durations'),
  inputs: z.array(fileInput).min(1).optional().describe('images to edit (an edit model)'),
  image: fileInput.optional().describe('first frame (image-to-video)'),
  referenceImages: z.array(fileInput).min(1).optional().describe('reference images (reference-to-video)'),
  video: fileInput.optional().describe('source video (video-extend, video-edit)'),
  source: z
    .string()
    .min(1)
    .optional()
    .describe('an earlier video item, sent as sourceJobId (video-extend, video-edit)'),
  approval: approvalSchema
    .optional()
    .describe(
      "as a gate, how long its made version waits for a person's decision, and what is decided then; default: as long as it takes",
    ),
  approved: z
    .array(z.string().min(1))
    .min(1)
    .optional()
    .describe(
      'gates: items whose current version a person must approve (review, or genbatch approve) before this one is sent; a rejected gate skips it, unpaid; templates allowed',
    ),
  tags: z
    .array(z.string().min(1))
    .min(1)
    .optional()
    .describe(
      'labels: status and the results show items and credits per tag, and run --only tag:NAME selects by them; templates allowed, and a value with commas gives several',
    ),
  priority: z
    .union([z.number(), z.string().min(1)])
    .optional()
    .describe(
      'orders ready items: higher first, then manifest order (default 0; templates allowed, so a rows column can give it)',
    ),
  ...copyFields,
};

export const defaultsSchema = z.strictObject(itemFields);

export const itemSchema = z.strictObject({
  id: z.string().min(1).describe('stable identity; templates allowed'),
  ...itemFields,
  matrix: z.record(varName, z.array(scalar).min(1)).optional().describe('one item per combination of these values'),
  rows: z
    .string()
    .min(1)
    .optional()
    .describe('a CSV (with header) or JSONL file: one item per row, columns as template names'),
  repeat: z.int().min(1).max(1000).optional().describe('independent jobs of the same item: ids get #1, #2, …'),
});

const videoPriceTable = z.record(
  z.string().describe('resolution'),
  z.record(z.string().describe('duration'), z.number().nonnegative()),
);

export const manifestSchema = z.strictObject({
  $schema: z.string().optional().describe('the JSON Schema editors check the manifest with'),
  version: z.literal(1).describe('the manifest format: 1'),
  id: z
    .string()
    .min(1)
    .optional()
    .describe(
      "the run's identity, from which every idempotency key is made; default: the name and where the outputs go",
    ),
  name: z.string().min(1).optional().describe('defaults to the file name'),
  defaults: defaultsSchema.optional().describe('merged into every item'),
  approval: approvalSchema
    .optional()
    .describe("every gate's wait for a person's decision, and what is decided then (an item's own wins)"),
  ...copyFields,
  output: z
    .strictObject({
      dir: z
        .string()
        .min(1)
        .optional()
        .describe('a folder relative to the manifest, or s3://BUCKET/PREFIX; default out/<name>'),
      name: z
        .string()
        .min(1)
        .optional()
        .describe('per output file; {{id}}, {{n}} (from 1), {{ext}}, {{model}}, {{type}} and vars'),
    })
    .optional()
    .describe('where outputs go and how they are named'),
  budget: z
    .strictObject({
      maxCredits: z
        .number()
        .positive()
        .optional()
        .describe('stop submitting once the run was charged this much, net of refunds'),
      perTag: z
        .record(z.string().min(1), z.number().positive())
        .optional()
        .describe(
          "per tag, the credits its items may be charged, net of refunds: that tag's items stop once it is spent; an item with several tags counts in each",
        ),
    })
    .optional()
    .describe('what the run may spend (--max-credits overrides maxCredits)'),
  vars: z.record(varName, scalar).optional().describe('values templates can use: {{name}}'),
  prices: z
    .record(z.string().describe('model id'), z.union([z.number().nonnegative(), videoPriceTable]))
    .optional()
    .describe('credits the catalog does not give: a number per job, or resolution → duration → credits'),
  items: z
    .array(itemSchema)
    .min(1, 'a manifest needs at least one item')
    .describe('what to generate: each entry one item, or many with matrix, rows or repeat'),
});

export type Manifest = z.infer<typeof manifestSchema>;
export type ManifestItem = z.infer<typeof itemSchema>;
export type FileInputSpec = z.infer<typeof fileInput>;
