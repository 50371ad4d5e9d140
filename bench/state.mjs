// A state file as a finished 100,000-item catalog run leaves it, written through the store's own
// transitions: the report and review benchmarks read it.
import { linkSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { keptName, thumbsBeside } from '../dist/copies/thumbs/kept.js';
import { thumbnailOf } from '../dist/copies/thumbs/maker-child.js';
import { Store } from '../dist/store/index.js';
import { DEFAULT_KEY_LIMITS } from '../dist/scheduler/limits.js';
import { makePng } from '../dist/simulator/media.js';

export const skuOf = (i) => `SKU-${String(i).padStart(6, '0')}`;

/**
 * Every item attempted once at the key's pace (10 a minute, so the run spans days), 1 in 50
 * failed and refunded. With `outDir`, every output is on disk (hard links of one PNG);
 * with `reviewed`, 1 in 10 done items approved and 1 in 20 rejected; with `tagged`, two tags an item;
 * `image`: the outputs' size (192 x 192 by default, the simulator's).
 */
export function buildCatalogState(path, { items, outDir, reviewed = false, tagged = false, image, gated }) {
  const store = Store.open(path);
  const start = Date.now() - items * 6_000;
  // With `gated`: the last `waiting` items wait for a decision, each on one of `gates` done and undecided items.
  const waitingFrom = gated ? items - gated.waiting : items;
  const gates = gated ? gateItems(waitingFrom, gated.gates, reviewed) : [];
  const gateOf = (i) => skuOf(gates[(i - waitingFrom) % gates.length]);
  store.itemSync.sync(
    (function* () {
      for (let i = 0; i < items; i++) {
        // A catalog's items carry their row (sku, title): the results and the gallery's groups have them.
        const spec = {
          id: skuOf(i),
          type: 'image',
          model: i % 4 ? 'studio-xl' : 'studio-lite',
          prompt: `Ceramic item ${i}, hand glazed, studio product photo`,
          aspectRatio: '4:5',
          resolution: '2K',
          values: { sku: skuOf(i), title: `Ceramic item ${i}` },
          // With `tagged`: a season for all, and one of five product lines.
          ...(tagged ? { tags: ['spring', `line-${i % 5}`] } : {}),
        };
        const gate = i >= waitingFrom ? [gateOf(i)] : [];
        yield {
          id: spec.id,
          seq: i,
          type: 'image',
          model: spec.model,
          contentHash: `h${i}`,
          spec: JSON.stringify(spec),
          dependsOn: gate,
          gates: gate,
        };
      }
    })(),
    start,
    false,
  );
  // A file system allows some 65,000 links to one file: a source file per 10,000 outputs.
  const sourceOf = (i) => {
    const path = sourceFile(outDir, i);
    if (i % 10_000 === 0 || i === 0)
      writeFileSync(path, makePng(`bench ${Math.floor(i / 10_000)}`, image?.width, image?.height));
    return path;
  };
  if (outDir) mkdirSync(outDir, { recursive: true });
  // Through the item's own transitions, as a run makes them.
  store.tx(() => {
    const failure = { code: 'GENERATION_FAILED', message: 'The generation failed; the credits were refunded.' };
    for (let i = 0; i < waitingFrom; i++) {
      const item = skuOf(i);
      const job = `job_${i}`;
      const at = start + i * 6_000;
      store.lifecycle.startAttempt(item, 1, `key-${i}`, '{}', at, 'fp-bench');
      store.lifecycle.recordSent(item, 1, at, 'fp-bench');
      store.lifecycle.recordAccepted(item, 1, job, 8, 0, at + 50);
      if (i % 50 === 49) {
        store.lifecycle.recordEnded(
          item,
          1,
          { jobId: job, status: 'failed', refunded: 8, refundDay: 0, error: failure },
          at + 40_000,
        );
        store.lifecycle.endWithoutOutput(item, 'failed', failure, at + 40_000);
        continue;
      }
      const name = `${item}-1.png`;
      store.lifecycle.recordEnded(item, 1, { jobId: job, status: 'completed', refunded: 0, refundDay: 0 }, at + 50_000);
      store.outputFiles.claimPath(job, 1, item, name, 1, at + 50_000);
      const file = { path: name, bytes: 4785, sha256: 'ab'.repeat(32), contentType: 'image/png', mtimeMs: at };
      store.lifecycle.outputSaved(item, job, 1, file, at + 51_000, true);
      if (outDir) linkSync(sourceOf(i), join(outDir, name));
      if (reviewed && i % 10 === 0)
        store.decisions.decide({ itemId: item, version: 1, decision: 'approved', by: 'bench', now: at + 60_000 });
      if (reviewed && i % 20 === 5)
        store.decisions.decide({
          itemId: item,
          version: 1,
          decision: 'rejected',
          note: 'glaze too dark',
          by: 'bench',
          now: at + 60_000,
        });
    }
  });
  if (gated) {
    // The items that wait, settled on their gates; priced as a run records its shapes' prices.
    store.gates.settleAll();
    store.setMeta(
      'shape_prices',
      JSON.stringify(
        ['studio-xl', 'studio-lite'].map((model) => ({
          type: 'image',
          model,
          resolution: '2K',
          duration: null,
          credits: model === 'studio-xl' ? 8 : 2,
        })),
      ),
    );
  }
  const run = store.runs.begin(start, { limits: DEFAULT_KEY_LIMITS, timeScale: 1, outDir: outDir ?? '' });
  store.runs.end(run, start + items * 6_000);
  store.close();
}

/** The first `count` items made and left undecided (not failed, approved or rejected as the built state does). */
function gateItems(made, count, reviewed) {
  const gates = [];
  for (let i = 0; i < made && gates.length < count; i++) {
    if (i % 50 === 49 || (reviewed && (i % 10 === 0 || i % 20 === 5))) continue;
    gates.push(i);
  }
  return gates;
}

/** The file an output of the built state is a hard link of. */
const sourceFile = (outDir, i) => join(outDir, `.bench-source-${Math.floor(i / 10_000)}.png`);

/**
 * The review's thumbnails of a built state's outputs, as its run made them while it saved each (outputs larger than
 * a card): each source's made once by the run's own code, each output's a hard link of its source's.
 */
export async function keepRunThumbnails(path, { items, outDir }) {
  const dir = thumbsBeside(path);
  mkdirSync(dir, { recursive: true });
  for (let source = 0; source * 10_000 < items; source++) {
    const made = join(dir, `.bench-source-${source}.webp`);
    writeFileSync(made, await thumbnailOf(readFileSync(sourceFile(outDir, source * 10_000))));
    for (let i = source * 10_000; i < Math.min(items, (source + 1) * 10_000); i++)
      if (i % 50 !== 49) linkSync(made, join(dir, keptName(`${skuOf(i)}-1.png`)));
  }
}
