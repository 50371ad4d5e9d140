import { formatDuration } from '../../estimate/duration.js';
import { madeAgainstLine, type Status } from '../../report/status.js';
import { count, localDateTime, num, paintFor, table, type Paint } from '../format.js';

/** status --json keeps ISO times; the table says them in local time with the zone. */
const when = (iso: string | null) => (iso ? localDateTime(Date.parse(iso)) : 'unknown');
import { retryItems, stateStatus, writeReportFiles } from '../../library/state.js';
import type { FlagValues } from '../../options/flag.js';
import type { REPORT_FLAGS, RETRY_FLAGS, STATE_FLAGS } from '../../options/flags.js';

type StateFlags = FlagValues<typeof STATE_FLAGS>;

/** Items with a problem the status table lists; --json lists them all. */
const PROBLEMS_SHOWN = 20;

const clip = (text: string, max: number) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);

/** Progress from the state file alone: no network. */
export async function statusCommand(
  path: string,
  options: StateFlags,
  cwd: string,
  out: { isTTY?: boolean },
  env: NodeJS.ProcessEnv,
): Promise<string> {
  const { status, found, elsewhere } = await stateStatus(path, options, cwd);
  if (options.json) return JSON.stringify(status, null, 2);
  if (!found)
    return elsewhere
      ? `${status.manifest}: nothing has run here yet (${elsewhere})`
      : `${status.manifest}: nothing has run yet (its state will be ${status.state}); genbatch run ${path}${options.simulate ? ' --simulate' : ''} starts it`;
  return statusTable(status, paintFor(out, env));
}

/** What waits for a decision: the items and their credits, and the gates they wait on. */
function decisionLines(d: Status['decisions']): string[] {
  if (!d.items) return [];
  const lines = [
    `waiting for a decision: ${count(d.items, 'item')}, ${d.unpriced ? 'at least ' : ''}${count(d.credits, 'credit')} if approved (genbatch review, or genbatch approve ID …)`,
    table(
      ['gate', 'waiting', 'credits', 'decide'],
      d.gates
        .slice(0, PROBLEMS_SHOWN)
        .map((g) => [
          g.id,
          num(g.waiting),
          num(g.credits),
          !g.made
            ? 'not made yet'
            : g.deadline
              ? `now; at ${g.deadline} its timeout ${g.onTimeout === 'approve' ? 'approves' : 'skips'}`
              : 'now',
        ]),
    ),
  ];
  if (d.gates.length > PROBLEMS_SHOWN)
    lines.push(`… and ${d.gates.length - PROBLEMS_SHOWN} more gates (status --json lists them all)`);
  return lines;
}

/** Several keys: what each sent, and spent today (its own daily cap). */
function keyTable(s: Status): string[] {
  if (s.keys.length < 2) return [];
  return [
    table(
      ['key', 'jobs', 'credits net', 'today', 'open'],
      s.keys.map((k) => [
        k.fingerprint || '(before keys were recorded)',
        num(k.jobs),
        num(k.charged - k.refunded),
        num(k.chargedToday),
        num(k.open),
      ]),
    ),
  ];
}

function statusTable(s: Status, paint: Paint): string {
  const states = (Object.entries(s.items) as [string, number][]).filter(([state, n]) => state !== 'total' && n > 0);
  const run = s.run;
  const lines = [
    `${s.manifest}: ${count(s.items.total, 'item')} (state ${s.state})${s.madeAgainst ? `\n${madeAgainstLine(s.madeAgainst)}` : ''}`,
    table(
      ['state', 'items'],
      states.map(([state, n]) => [state, num(n)]),
    ),
    `credits: ${num(s.credits.charged)} charged, ${num(s.credits.refunded)} refunded, ${num(s.credits.net)} net`,
  ];
  // Padded first, coloured after: the escape codes take no columns.
  const redRows = (text: string) =>
    text
      .split('\n')
      .map((line, i) => (i === 0 ? line : paint.red(line)))
      .join('\n');
  if (Object.keys(s.failures).length) lines.push(redRows(table(['failure', 'items'], Object.entries(s.failures))));
  if (s.problems.length) {
    const shown = s.problems.slice(0, PROBLEMS_SHOWN).map((p) => [p.id, p.state, p.code, clip(p.message, 80)]);
    lines.push(redRows(table(['item', 'state', 'code', 'message'], shown)));
    if (s.problems.length > PROBLEMS_SHOWN)
      lines.push(`… and ${s.problems.length - PROBLEMS_SHOWN} more (status --json lists them all)`);
  }
  if (s.skippedByDecision.length) {
    const shown = s.skippedByDecision.slice(0, PROBLEMS_SHOWN).map((p) => `  ${p.id}: ${clip(p.reason, 100)}`);
    const more = s.skippedByDecision.length - shown.length;
    lines.push(
      `skipped by a decision, never paid (approve its gate to send it): ${count(s.skippedByDecision.length, 'item')}`,
      ...shown,
      ...(more > 0 ? [`  … and ${num(more)} more (status --json lists them all)`] : []),
    );
  }
  lines.push(...keyTable(s));
  lines.push(...runLines(s), ...deliveryLines(s));
  if (s.items.done > 0)
    lines.push(
      `review: ${num(s.review.approved)} approved, ${num(s.review.rejected)} rejected${s.review.rejectedByChecks ? ` (${num(s.review.rejectedByChecks)} by the manifest's checks)` : ''}, ${num(s.review.unreviewed)} unreviewed`,
    );
  lines.push(...decisionLines(s.decisions));
  if (s.changed)
    lines.push(
      `changed after they were submitted: ${count(s.changed, 'item')}, kept as they were (their content, or an input made again since); run --redo-changed makes them again`,
    );
  if (s.tags.length)
    lines.push(
      table(
        ['tag', 'items', 'done', 'credits net'],
        s.tags.map((t) => [t.tag, num(t.items), num(t.done), num(t.net)]),
      ),
    );
  if (s.waiting.length)
    lines.push(
      table(
        ['state', 'items', 'waiting for'],
        s.waiting.map((w) => [w.state, num(w.items), `${w.for}${w.until ? ` (${when(w.until)})` : ''}`]),
      ),
    );
  if (run.sessions > 0)
    lines.push(
      `run time: ${formatDuration(run.seconds)} over ${count(run.sessions, 'session')} since ${when(run.startedAt)}`,
    );
  return lines.join('\n');
}

/** Puts failed items back with new attempts (by code, if given); blocked items are never resent unchanged. */
export async function retryCommand(
  path: string,
  options: FlagValues<typeof RETRY_FLAGS>,
  cwd: string,
): Promise<string> {
  const retried = await retryItems(path, options, cwd);
  if ('rejected' in retried) {
    const { state, rejected } = retried;
    if (options.json) return JSON.stringify({ state, requeued: rejected.length, ids: rejected }, null, 2);
    return rejected.length
      ? `${count(rejected.length, 'item')} rejected in review put back; run the manifest again (genbatch run) to regenerate them (their rejected outputs stay on disk).`
      : 'no done item is rejected in review: nothing put back.';
  }
  const { state, requeued, blocked, conflicts, nothingFailed } = retried;
  if (options.json) return JSON.stringify({ state, requeued, blocked, conflicts }, null, 2);
  if (nothingFailed) return 'no item failed: nothing to put back.';
  const notes = [
    blocked
      ? `${blocked === 1 ? '1 blocked item stays' : `${count(blocked, 'blocked item')} stay`} blocked: change ${blocked === 1 ? 'its' : 'their'} prompt to resubmit ${blocked === 1 ? 'it' : 'them'}.`
      : '',
    conflicts.length
      ? `${count(conflicts.length, 'item')} stopped on a key conflict stay as they are (a job may exist under their key): name them with --id to submit them again, paying again: ${conflicts.slice(0, 5).join(', ')}${conflicts.length > 5 ? ', …' : ''}`
      : '',
  ].filter(Boolean);
  return [`${count(requeued, 'item')} put back; run the manifest again (genbatch run) to go on.`, ...notes].join('\n');
}

/** Writes results.jsonl and results.csv (and the gallery, sidecars) from the state file alone: no network. */
export async function reportCommand(
  path: string,
  options: FlagValues<typeof REPORT_FLAGS>,
  cwd: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<string> {
  const w = await writeReportFiles(path, options, cwd, env);
  const { tags } = w;
  if (options.json) return JSON.stringify(w, null, 2);
  const extra = [
    w.html ? `gallery: ${w.html}` : '',
    w.sidecars !== null ? `sidecars: ${w.sidecars} next to the outputs` : '',
    tags.length
      ? table(
          ['tag', 'items', 'done', 'credits net'],
          tags.map((t) => [t.tag, num(t.items), num(t.done), num(t.net)]),
        )
      : '',
  ].filter(Boolean);
  return [`${count(w.items, 'item')} written to ${w.jsonl} and ${w.csv}`, ...extra].join('\n');
}

/** Whether a run holds the state, what it does or waits for, and when it was last active. */
function runLines(s: Status): string[] {
  const run = s.run;
  if (run.running) {
    const eta = s.eta
      ? `; ETA ${formatDuration(s.eta.seconds)} (${when(s.eta.at)}, from ${s.eta.basis === 'observed' ? "this run's pace" : 'the limits'})`
      : '';
    const wait = run.waitingUntil ? `; submissions wait for the daily cap until ${when(run.waitingUntil)}` : '';
    const unreachable = run.unreachableSince
      ? `; the service has answered nothing since ${when(run.unreachableSince)} (submissions pause; it is probed)`
      : '';
    const paused = run.pausedSince
      ? `; paused since ${when(run.pausedSince)} (nothing new is sent; genbatch resume goes on)`
      : '';
    const bucket = run.bucket
      ? `; the bucket has answered nothing but faults (${run.bucket.code ?? 'no answer'}) since ${when(run.bucket.since)}: its calls are sent again until ${when(run.bucket.givesUpAt)}, then the run exits 4`
      : '';
    return [`running: ${s.inFlight} in flight${paused}${wait}${unreachable}${bucket}${eta}`];
  }
  if (run.pausedSince)
    return [
      `paused since ${when(run.pausedSince)}: a run started on this state starts paused (genbatch resume goes on)`,
    ];
  if (run.sessions > 0) return [`not running; last active ${when(run.lastActiveAt)}`];
  return [];
}

/** What the outputs still owe: publication to the bucket, and web copies not made yet. */
function deliveryLines(s: Status): string[] {
  const lines = s.publication ? [publicationLine(s.publication)] : [];
  if (s.copies.missing)
    lines.push(
      `web copies not made yet: ${num(s.copies.missing)} (run the same command to make them; nothing is paid)`,
    );
  return lines;
}

/** Outputs going to a bucket: how many are there, and what waits locally. */
function publicationLine(p: NonNullable<Status['publication']>): string {
  const held = p.failed ? `, ${num(p.failed)} under a name another object holds` : '';
  const copies = p.copiesWaiting ? `, ${num(p.copiesWaiting)} of them web copies` : '';
  return `published to ${p.to}: ${num(p.published)}; waiting: ${num(p.waiting)} (${num(Math.ceil(p.waitingBytes / 1024 ** 2))} MB saved locally${copies}${held})`;
}
