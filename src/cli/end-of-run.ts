import { resolve } from 'node:path';
import type { RunSummary } from '../library/index.js';
import { openCount } from '../library/views.js';
import { count, num, type Paint } from './format.js';

/** Problem items the end of a run names with their message; status lists them all. */
const PROBLEMS_SHOWN = 10;

/** What a run prints when it ends: counts, credits, where things are, what failed and why, and what to do next. */
export function endOfRunText(
  s: RunSummary,
  outDir: string,
  cwd: string,
  logPath: string,
  manifestArg: string,
  paint: Paint,
  /** A rehearsal: its hints name its own state (--simulate), and say that running it again starts over. */
  rehearsal = false,
): string {
  const c = s.counts;
  const open = openCount(c);
  const total = Object.values(c).reduce((a, b) => a + b, 0);
  // What a person's decision skipped is no failure: said apart, never in red.
  const decided = s.skippedByDecision;
  const bad = c.failed + c.rejected + c.blocked + c.skipped - decided;
  const lines = [
    (c.done === total ? paint.green : (t: string) => t)(`done ${num(c.done)}/${num(total)}`) +
      (bad
        ? paint.red(
            `, failed ${num(c.failed)}, rejected ${num(c.rejected)}, blocked ${num(c.blocked)}, skipped ${num(c.skipped - decided)}`,
          )
        : '') +
      (decided ? `, skipped by a decision ${num(decided)}` : '') +
      (open ? paint.yellow(`, not finished ${open}`) : '') +
      (c.waiting ? paint.yellow(`, waiting for a decision ${num(c.waiting)}`) : ''),
    `credits: ${num(s.credits.charged)} charged, ${num(s.credits.refunded)} refunded, ${num(s.credits.charged - s.credits.refunded)} net`,
    `outputs: ${outDir.startsWith('s3://') ? outDir : resolve(cwd, outDir)}`,
    `log: ${logPath}`,
  ];
  const stateArg = rehearsal ? `${manifestArg} --simulate` : manifestArg;
  lines.push(...failureLines(s, paint, stateArg));
  if (s.changed.length)
    lines.push(
      `${count(s.changed.length, 'item')} changed after they were submitted and keep their result (--redo-changed resubmits them): ${s.changed.slice(0, 5).join(', ')}${s.changed.length > 5 ? ', …' : ''}`,
    );
  lines.push(...keyLines(s, paint));
  return [...lines, ...afterwardLines(s, paint, stateArg, rehearsal)].join('\n');
}

/** The failures by code, and the first problem items with their message. */
function failureLines(s: RunSummary, paint: Paint, manifestArg: string): string[] {
  if (!Object.keys(s.failures).length) return [];
  const byCode = Object.entries(s.failures)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');
  const lines = [paint.red(`failures by code: ${byCode}`)];
  const shown = s.problems.slice(0, PROBLEMS_SHOWN);
  for (const p of shown) lines.push(`  ${paint.bold(p.id)} (${p.state}) ${paint.red(p.code)}: ${p.message}`);
  const total = Object.values(s.failures).reduce((a, b) => a + b, 0);
  if (total > shown.length)
    lines.push(`  … and ${count(total - shown.length, 'more item')}: genbatch status ${manifestArg} lists them all`);
  return lines;
}

/** Keys refused during the run, and keys the run lacks, with the items that wait for each. */
function keyLines(s: RunSummary, paint: Paint): string[] {
  const lines: string[] = [];
  for (const [fingerprint, r] of Object.entries(s.keysRefused)) {
    lines.push(
      paint.yellow(
        `the key ${fingerprint} was refused during the run (${r.code}: ${r.message})${r.waiting ? `; ${count(r.waiting, 'item')} sent with it wait${r.waiting === 1 ? 's' : ''} for it (${r.waiting === 1 ? 'it' : 'they'} may have been accepted: resent or read with another key, ${r.waiting === 1 ? 'it' : 'they'} could be paid for twice)` : ''}`,
      ),
    );
  }
  for (const [fingerprint, n] of Object.entries(s.keysMissing)) {
    lines.push(
      `${count(n, 'item')} ${n === 1 ? 'was' : 'were'} sent with the API key whose fingerprint is ${fingerprint}, which this run does not have: ${n === 1 ? 'it waits' : 'they wait'} for a run with that key (resent or read with another key, ${n === 1 ? 'it' : 'they'} could be paid for twice)`,
    );
  }
  return lines;
}

/** What was left for later, why the run stopped, and what can be done about what failed. */
function afterwardLines(s: RunSummary, paint: Paint, manifestArg: string, rehearsal: boolean): string[] {
  const c = s.counts;
  const lines: string[] = [];
  // Said as what was held back and what it costs: never as a command to run, which would pay for what the user left out.
  if (s.notSelected) {
    const price = s.notSelectedCredits;
    const cost = !price
      ? ''
      : price.unpriced === s.notSelected
        ? ', of no known price'
        : `, ${price.unpriced ? 'at least ' : ''}${count(price.credits, 'credit')}`;
    lines.push(
      `${count(s.notSelected, 'item')} not selected by --only ${s.notSelected === 1 ? 'is' : 'are'} still to be sent${cost}: held back, nothing paid for ${s.notSelected === 1 ? 'it' : 'them'} (a run without --only would send ${s.notSelected === 1 ? 'it' : 'them all'})`,
    );
  }
  if (s.removed)
    lines.push(
      `${count(s.removed, 'item')} of an earlier version of the manifest ${s.removed === 1 ? 'is' : 'are'} no longer in it: not run and not counted here; what ${s.removed === 1 ? 'it' : 'they'} already had stays in the state and the output dir`,
    );
  if (s.publication) lines.push(...publicationLines(s.publication, paint));
  if (s.copies?.missing)
    lines.push(
      paint.yellow(
        `${count(s.copies.missing, 'web copy', 'web copies')} not made yet (see the log for why): run the same command to make ${s.copies.missing === 1 ? 'it' : 'them'}, nothing is paid again`,
      ),
    );
  if (s.decisions) lines.push(paint.yellow(decisionLine(s.decisions, manifestArg)));
  if (s.onRejectedInputs) {
    const shown = s.onRejectedInputs.slice(0, 5).map((w) => `${w.id} (from ${w.input})`);
    const n = s.onRejectedInputs.length;
    lines.push(
      paint.yellow(
        `${count(n, 'item')} ${n === 1 ? 'was' : 'were'} not sent: an input's current version was rejected in review, and a rejected output is never an input: ${shown.join(', ')}${n > 5 ? ', …' : ''}. Nothing was paid for ${n === 1 ? 'it' : 'them'}; genbatch run ${manifestArg} --redo-rejected makes the input again, then ${n === 1 ? 'it goes' : 'they go'} on`,
      ),
    );
  }
  if (s.stop) lines.push(paint.yellow(`stopped: ${s.stop.message}`));
  // What can be done about what failed, in the user's own words.
  // Retry puts back no item a decision skipped (a rejected gate): only a decision brings it back.
  const retryable = c.failed + c.skipped - s.skippedByDecision;
  if (retryable && rehearsal)
    lines.push(
      `a rehearsal starts over each time: run it again (with --simulate) to try the ${count(retryable, 'failed or skipped item')} afresh; genbatch status ${manifestArg} lists them`,
    );
  else if (retryable)
    lines.push(
      `to submit the ${count(retryable, 'failed or skipped item')} again (new attempts, paid again): genbatch retry ${manifestArg} (--code CODE or --id ID to choose; genbatch status ${manifestArg} lists them), then run it again`,
    );
  if (c.blocked)
    lines.push(
      `${count(c.blocked, 'blocked item')} (moderation) ${c.blocked === 1 ? 'is' : 'are'} never resent unchanged: change the prompt to submit again`,
    );
  return lines;
}

/** Items left waiting for a decision: how many, what they would spend, and the commands that decide them. */
function decisionLine(d: NonNullable<RunSummary['decisions']>, manifestArg: string): string {
  const cost =
    d.unpriced === d.items
      ? 'of no known price'
      : `${d.unpriced ? 'at least ' : ''}${count(d.credits, 'credit')} if approved`;
  const gates = `${d.gates.slice(0, 3).join(', ')}${d.gates.length > 3 ? `, … (${d.gates.length} in all)` : ''}`;
  return `${count(d.items, 'item')} ${d.items === 1 ? 'waits' : 'wait'} for a decision (${cost}; nothing paid for ${d.items === 1 ? 'it' : 'them'} yet), on ${d.gates.length === 1 ? 'the gate' : 'the gates'} ${gates}: decide in genbatch review ${manifestArg}, or with genbatch approve ${manifestArg} ID … (--waiting: every gate made) and genbatch reject ${manifestArg} ID …; then run the same command, or run it with --wait-for-decisions to stay until they are decided`;
}

/** Outputs going to a bucket: how many are there, and what waits (with why and what to do). */
function publicationLines(
  p: NonNullable<RunSummary['publication']>,
  paint: { yellow(text: string): string },
): string[] {
  const copies = p.copiesPublished ? ` and ${count(p.copiesPublished, 'web copy', 'web copies')}` : '';
  const lines = [`${count(p.published - p.copiesPublished, 'output')}${copies} published to ${p.location}`];
  if (p.waiting > 0)
    lines.push(
      paint.yellow(
        `${count(p.waiting, 'file')} (${p.copiesWaiting ? `${count(p.copiesWaiting, 'web copy', 'web copies')} among them` : 'outputs'}) ${p.waiting === 1 ? 'waits' : 'wait'} to be published (saved and verified in ${p.staging}${p.failed ? `; ${p.failed} of them under a name another object holds: see the log` : ''}): run the same command to publish ${p.waiting === 1 ? 'it' : 'them'}, nothing is paid again`,
      ),
    );
  return lines;
}
