import { relative } from 'node:path';
import { type blockers, formatDuration, type Estimate } from '../../estimate/index.js';
import type { LoadedManifest } from '../../manifest/index.js';
import { formatRate, type KeyLimits } from '../../scheduler/limits.js';
import type { FlagValues } from '../../options/flag.js';
import type { VALIDATE_FLAGS } from '../../options/flags.js';
import type { EstimateFlags } from '../../library/estimate.js';
import type { ValidateResult } from '../../library/validate.js';
import { EXIT, ExitError } from '../../library/outcome.js';
import { count, num, table } from '../format.js';
import { issueReport, warningReport } from '../../manifest/load-valid.js';

export { issueReport, loadValid, locate } from '../../manifest/load-valid.js';

export async function validateCommand(
  path: string,
  options: FlagValues<typeof VALIDATE_FLAGS>,
  env: NodeJS.ProcessEnv,
  cwd: string,
): Promise<string> {
  const { validateWith } = await import('../../library/validate.js');
  const found = await validateWith(path, options, env, cwd);
  if (!found.valid) throw invalid(found, options.json);
  const { more: _more, ...document } = found;
  if (options.json) return JSON.stringify(document, null, 2);
  const warned = found.warnings.length ? `\n${warningReport(found.warnings)}` : '';
  // Offline, a valid manifest may still name a model the service does not have: said, with how to check it.
  const online = found.online
    ? '\nonline: every model, kind, mode and allowed value checks out against the service, and the key has the scopes it needs.'
    : ' (models and values not checked: --online)';
  return `${summary(found, cwd)}${online}${warned}`;
}

function summary(found: ValidateResult, cwd: string): string {
  const items = found.items!;
  const out = found.outputDir!;
  return `${found.manifest}: valid: ${count(items.total, 'item')} (${items.image} image, ${items.video} video); outputs go to ${out.startsWith('s3://') ? out : relative(cwd, out) || '.'}`;
}

/** Exit 2; with --json the issues go to stdout as one document (the one-line reason to stderr). */
function invalid(found: ValidateResult, json: boolean | undefined): ExitError {
  const issues = { issues: found.issues, count: found.issues.length + found.more };
  if (!json) return new ExitError(EXIT.usage, issueReport(issues));
  const document = JSON.stringify(
    { manifest: found.manifest, valid: false, issues: found.issues, more: found.more },
    null,
    2,
  );
  return new ExitError(
    EXIT.usage,
    `${issues.count} problem${issues.count === 1 ? '' : 's'} found; nothing was submitted.`,
    document,
  );
}

export async function estimateCommand(
  path: string,
  options: EstimateFlags,
  env: NodeJS.ProcessEnv,
  cwd: string,
): Promise<{ text: string; exitCode: number }> {
  const { estimateWith, estimateDocument } = await import('../../library/estimate.js');
  const parts = await estimateWith(path, options, env, cwd);
  const { exitCode, redo } = parts;
  if (options.json) {
    const { exitCode: _code, ...document } = estimateDocument(parts);
    return { text: JSON.stringify(document, null, 2), exitCode };
  }
  const redoLine = redo
    ? `\nregenerating ${count(redo.items.total, 'item')} rejected in review: ${num(redo.credits.total)} credits (counted in what remains)`
    : '';
  const { loaded, result, limits, simulated, remaining, spent, problems, timeScale, timeScaleFrom } = parts;
  const clock = { timeScale, timeScaleFrom };
  return {
    text: `${formatEstimate(loaded, result, limits, { simulated, remaining, spent, problems, clock })}${redoLine}`,
    exitCode,
  };
}

const n = (x: number) => x.toLocaleString('en-US');

/** Days shown one by one; a longer plan says how it goes on. */
const PLAN_DAYS_SHOWN = 14;

/** The plan day by day: each key's items and credits, and the day the run ends. */
function planLines(plan: NonNullable<Estimate['plan']>): string[] {
  const lines = [
    `plan: the last item is sent on key day ${plan.endsOnDay} (day 1 is the day the run starts)${plan.notPlaced ? `; ${count(plan.notPlaced, 'item')} cannot be placed (no price, or over every cap)${plan.notPlacedIds.length ? `: ${plan.notPlacedIds.slice(0, 5).join(', ')}${plan.notPlacedIds.length > 5 ? ', …' : ''}` : ''}` : ''}`,
  ];
  for (const d of plan.days.slice(0, PLAN_DAYS_SHOWN))
    lines.push(
      `  day ${d.day}: ${d.keys.map((k) => `${k.key.slice(0, 6)} ${count(k.items, 'item')}, ${count(k.credits, 'credit')}`).join('; ')}`,
    );
  if (plan.days.length > PLAN_DAYS_SHOWN)
    lines.push(`  … ${count(plan.days.length - PLAN_DAYS_SHOWN, 'more day')} (--json lists them all)`);
  return lines;
}

/** Items and credits per tag, with each tag's budget where it has one. */
function tagTable(tags: Estimate['tags']): string {
  const rows = tags.map((t) => [
    t.tag,
    n(t.items),
    t.unpriced ? `${n(t.credits)} + ${n(t.unpriced)} unpriced` : n(t.credits),
    t.budget === undefined ? '' : `${n(t.budget)}${t.credits > t.budget ? ' (over)' : ''}`,
  ]);
  return table(['tag', 'items', 'credits', 'budget'], rows);
}

/** What the estimate's text says beside the figures: whose they are, what remains, what stops the run, whose clock. */
interface EstimateMore {
  simulated: boolean;
  remaining: Estimate | undefined;
  spent: number;
  problems: ReturnType<typeof blockers>;
  clock: { timeScale: number; timeScaleFrom: 'flag' | 'simulator' | 'none' };
}

/** What the totals leave out (items of no known price) and what of them waits for a person (gated). */
function priceNotes(e: Estimate): string[] {
  const lines: string[] = [];
  if (!e.credits.complete)
    lines.push(
      `${count(e.credits.unpricedItems, 'item has', 'items have')} no known price: the catalog gives none; add them under prices: in the manifest.`,
    );
  if (e.gated.items) lines.push(...gatedLines(e, 'gated:    '));
  return lines;
}

/** What waits for a person, and what of it an approval timeout spends by itself unless someone rejects in time. */
function gatedLines(e: Estimate, head: string): string[] {
  const { byTimeout } = e.gated;
  const person = e.gated.credits - byTimeout.credits;
  const lines = [
    `${head} ${count(e.gated.items, 'item')}, ${e.gated.unpriced ? 'at least ' : ''}${count(e.gated.credits, 'credit')}, paid only once their gates are approved; ${count(e.credits.total - e.gated.credits, 'credit')} spent now`,
  ];
  if (byTimeout.items)
    lines.push(
      `           of them ${count(byTimeout.items, 'item')}, ${count(byTimeout.credits, 'credit')}, an approval timeout approves by itself: spent once it passes unless someone rejects in time${person ? `; ${count(person, 'credit')} only once a person approves` : ''}`,
    );
  return lines;
}

function formatEstimate(m: LoadedManifest, e: Estimate, limits: KeyLimits, more: EstimateMore): string {
  const lines = [
    `${m.source.file} (${m.name}): ${count(e.items.total, 'item')}, ${n(e.items.image)} image, ${n(e.items.video)} video. Nothing was submitted.`,
  ];
  if (more.simulated)
    lines.push("simulated: the balance, daily cap and catalog below are the simulator's, not your key's");
  lines.push('');
  const rows = e.models.map((c) => [
    c.model,
    c.type,
    n(c.items),
    c.each !== undefined ? n(c.each) : c.unpriced === c.items ? '?' : 'varies',
    c.unpriced ? `${n(c.credits)} + ${n(c.unpriced)} unpriced` : n(c.credits),
    c.source,
  ]);
  rows.push([
    'total',
    '',
    n(e.items.total),
    '',
    e.credits.complete ? n(e.credits.total) : `at least ${n(e.credits.total)}`,
    '',
  ]);
  lines.push(table(['model', 'type', 'items', 'each', 'credits', 'price from'], rows), '');
  lines.push(...priceNotes(e));
  const r = more.remaining;
  if (r && r.items.total === 0)
    lines.push(
      `remaining: nothing: ${e.items.total === 1 ? 'the 1 item was' : `all ${n(e.items.total)} items were`} sent (${count(more.spent, 'credit')} charged net)`,
    );
  else if (r) {
    lines.push(
      `remaining: ${n(r.items.total)} of ${count(e.items.total, 'item')} not sent yet, ${r.credits.complete ? '' : 'at least '}${count(r.credits.total, 'credit')}, about ${formatDuration(r.duration.seconds)} (${count(more.spent, 'credit')} already charged net)`,
    );
    // What of it waits for a decision now, and what is spent now.
    if (r.gated.items) lines.push(...gatedLines(r, '  of it, gated:'));
  }
  const judged = r ?? e;
  if (judged.balance)
    lines.push(
      `balance:   ${count(judged.balance.credits, 'credit')}, ${judged.balance.enough ? 'enough' : `short by ${n(judged.credits.total - judged.balance.credits)}`}`,
    );
  const over = e.dailyCap.keys > 1 ? ` over ${e.dailyCap.keys} keys` : '';
  lines.push(
    `daily cap: ${count(e.dailyCap.credits, 'credit')} per key day${over}: ${e.dailyCap.keyDays} key day${e.dailyCap.keyDays === 1 ? '' : 's'}${e.plan?.notPlaced ? ' for the items that can be placed' : ''}`,
  );
  if (judged.budget) {
    const within = !more.problems.some((p) => p.reason === 'budget');
    lines.push(
      `budget:    ${count(judged.budget.maxCredits, 'credit')}, ${within ? 'within budget' : `over budget: the run stops after about ${count(judged.budget.itemsWithin, 'item')}`}`,
    );
  }
  // With a run under way, the time and the plan are the rest's, as the balance and the budget are.
  const rest = r ? ' for the rest' : '';
  lines.push(
    `time:      about ${formatDuration(judged.duration.seconds)}${rest}, limited by the ${judged.duration.limitedBy}${whoseClock(more.clock)}`,
    `           (submissions ${formatRate(limits.submit)}; ${limits.maxImagesInFlight} images in flight at ~50 s, ${limits.maxVideosInFlight} videos at ~5.5 min, the spec's typical durations)`,
  );
  if (e.tags.length) lines.push('', tagTable(e.tags));
  if (judged.plan && judged.items.total > 0) lines.push('', ...planLines(judged.plan));
  for (const p of more.problems) lines.push(`cannot run as planned (${p.reason}): ${p.message}`);
  return lines.join('\n');
}

/** Whose time the estimate is said in: nothing said for real time, which is the service's own. */
function whoseClock({ timeScale, timeScaleFrom }: { timeScale: number; timeScaleFrom: string }): string {
  if (timeScale === 1) return '';
  const whose = timeScaleFrom === 'flag' ? "--time-scale's" : "the simulator's";
  return ` (time x${timeScale}, ${whose}; --time-scale 1 gives real time)`;
}
