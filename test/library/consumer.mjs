// A program that drives genbatch as a library, as a pipeline would: imported by the package's name,
// run in a process of its own. It writes one JSON line (what it saw) and must end by itself.
import { estimate, run, validate } from 'genbatch';

const { manifest, cwd, baseUrl, apiKey, abortAfterAccepted, timeScale } = JSON.parse(process.argv[2]);
const found = await validate(manifest, { cwd });
const estimated = await estimate(manifest, { cwd, baseUrl, apiKey }).catch((e) => ({ rejected: e.exitCode }));
const controller = new AbortController();
const handle = run(manifest, { cwd, baseUrl, apiKey, timeScale, signal: controller.signal, maxImagesInFlight: '10' });
const kinds = {};
const itemless = new Set();
let accepted = 0;
for await (const event of handle.events) {
  kinds[event.kind] = (kinds[event.kind] ?? 0) + 1;
  if (['submitted', 'accepted', 'downloaded', 'item-final'].includes(event.kind) && !event.itemId)
    itemless.add(event.kind);
  if (event.kind === 'accepted' && ++accepted === abortAfterAccepted) controller.abort();
}
const outcome = await handle.done;
process.stdout.write(
  `${JSON.stringify({
    valid: found.valid,
    items: found.items,
    estimate: { exitCode: estimated.exitCode, credits: estimated.credits?.total, rejected: estimated.rejected },
    kinds,
    itemless: [...itemless],
    exitCode: outcome.exitCode,
    stop: outcome.stop?.kind ?? null,
    done: outcome.counts.done,
    charged: outcome.credits.charged,
    results: outcome.results !== null,
  })}\n`,
);
