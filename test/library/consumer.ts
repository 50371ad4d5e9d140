// Type-checked against the package by name (test/library/library.test.ts): what a TypeScript pipeline writes.
import { EXIT, type GenbatchEvent, type RunOutcome, estimate, run, validate } from 'genbatch';

export async function pipeline(manifest: string, signal: AbortSignal): Promise<number> {
  const found = await validate(manifest, { online: false });
  if (!found.valid) return found.issues.length + found.more;
  const figures = await estimate(manifest, { submitRate: '10/60s', maxCredits: 500 });
  if (figures.exitCode !== EXIT.ok) return figures.exitCode;
  const { events, done } = run(manifest, { signal, maxCredits: figures.credits.total, only: 'tag:spring' });
  const credits: number[] = [];
  for await (const event of events) credits.push(creditsOf(event));
  const outcome: RunOutcome = await done;
  return outcome.exitCode + outcome.counts.done;
}

function creditsOf(event: GenbatchEvent): number {
  if (event.kind === 'accepted') return event.credits;
  if (event.kind === 'downloaded') return event.bytes > 0 ? 0 : -1;
  if (event.kind === 'started') return event.items;
  return 0;
}
