import { makeMp4, makePng } from '../../src/simulator/media.js';

/** Local input files for pipeline manifests. */
export const MUG = makePng('a local mug');
export const CLIP = makeMp4('a local clip');
export const PIPELINE_FILES = { 'mug.png': MUG, 'clip.mp4': CLIP };

/** Edits with uploads and the four video modes, with an image → video → extend chain: 7 items. */
export const PIPELINE_ITEMS = `  - { id: hero, prompt: "A mug" }
  - { id: recolor, model: studio-edit, prompt: "Matte black", inputs: [mug.png] }
  - { id: recolor-2, model: studio-edit, prompt: "Glossy red", inputs: [mug.png] }
  - { id: spin, type: video, model: motion-2, prompt: "Spin", duration: 5, resolution: 720p, image: { from: hero } }
  - { id: longer, type: video, model: motion-extend, prompt: "Continue", duration: 5, resolution: 720p, source: spin }
  - { id: moodboard, type: video, model: motion-ref, prompt: "Dawn", duration: 5, resolution: 720p, referenceImages: [mug.png, { from: recolor }] }
  - { id: restyle, type: video, model: motion-edit, prompt: "Film look", duration: 5, resolution: 720p, video: clip.mp4 }
`;

export const PIPELINE = `version: 1\ndefaults: { model: studio-xl, aspectRatio: "16:9" }\nitems:\n${PIPELINE_ITEMS}`;

/** Drafts from products.csv; a final for each approved draft; a video for each approved final. */
export const DRAFT_FINAL_VIDEO = `version: 1
items:
  - id: "draft-{{sku}}"
    rows: products.csv
    model: studio-lite
    prompt: "{{title}}, studio product photo"
  - id: "final-{{sku}}"
    rows: products.csv
    model: studio-xl
    prompt: "{{title}}, studio product photo, final"
    approved: ["draft-{{sku}}"]
  - id: "spin-{{sku}}"
    rows: products.csv
    type: video
    model: motion-2
    prompt: "Slow turntable spin"
    duration: 5
    resolution: 720p
    image: { from: "final-{{sku}}", approved: true }
`;

/** The drafts and finals alone. */
export const DRAFT_FINAL = `${DRAFT_FINAL_VIDEO.split('\n  - id: "spin-{{sku}}"')[0]!}\n`;

/** A still, and a video made from it (no gate). */
export const STILL_AND_SPIN = `version: 1
items:
  - { id: still, model: studio-lite, prompt: "a mug" }
  - { id: spin, type: video, model: motion-2, prompt: "a slow spin", duration: 5, resolution: 720p, image: { from: still } }
`;
