import { decideItems, decisionRecord, type Decided } from '../../library/decisions.js';
import type { FlagValues } from '../../options/flag.js';
import type { APPROVE_FLAGS, REJECT_FLAGS, STATE_FLAGS } from '../../options/flags.js';
import { count } from '../format.js';

/** `approve` and `reject`: each decision, and what it sent on or skipped. */
export async function decideCommand(
  path: string,
  ids: readonly string[],
  decision: 'approved' | 'rejected',
  options: FlagValues<typeof APPROVE_FLAGS> | FlagValues<typeof REJECT_FLAGS>,
  cwd: string,
  env: NodeJS.ProcessEnv,
): Promise<string> {
  const decided = await decideItems(
    path,
    decision,
    { ...options, ids, waiting: 'waiting' in options ? options.waiting : undefined },
    cwd,
    env,
  );
  if (options.json) return JSON.stringify(decided, null, 2);
  return decidedText(decided, path, options.simulate ? ' --simulate' : '');
}

function decidedText(d: Decided, path: string, rehearsal: string): string {
  const lines = d.decisions.map((one) => {
    const moved = [
      one.unlocked.length
        ? `${count(one.unlocked.length, 'item')} to send: ${list(one.unlocked)} (${count(one.credits.unlocked, 'credit')}${one.decision === 'approved' && one.upTo.credits > one.credits.unlocked ? `; up to ${count(one.upTo.credits, 'credit')} with the approvals after it` : ''})`
        : '',
      one.skipped.length ? `${count(one.skipped.length, 'item')} skipped, unpaid: ${list(one.skipped)}` : '',
      one.takenBack.length
        ? `${count(one.takenBack.length, 'item')} taken back, unpaid: ${list(one.takenBack)}${credits(one.credits.takenBack)}`
        : '',
    ].filter(Boolean);
    const late = one.sentBefore.map(
      (d) => `${d.id} was sent before this decision: ${count(d.credits, 'credit')} spent`,
    );
    return [`${one.id} (version ${one.version}) ${one.decision}${moved.length ? `; ${moved.join('; ')}` : ''}`, ...late]
      .map((line, i) => (i ? `  ${line}` : line))
      .join('\n');
  });
  if (d.decisions.length === 0) lines.push('no gate is made and undecided: nothing to approve');
  lines.unshift(`state: ${d.state}`);
  if (d.notMade.length) lines.push(`not made yet, decided once they are: ${list(d.notMade)}`);
  const unlocked = d.decisions.reduce((n, one) => n + one.unlocked.length, 0);
  lines.push(
    d.waiting
      ? `${count(d.waiting, 'item')} still ${d.waiting === 1 ? 'waits' : 'wait'} for a decision (genbatch status ${path}${rehearsal} lists the gates)`
      : 'no item waits for a decision',
  );
  if (unlocked) lines.push(`a running genbatch run sends them within seconds; else: genbatch run ${path}${rehearsal}`);
  return lines.join('\n');
}

const credits = (n: number) => (n ? ` (${count(n, 'credit')} not spent)` : '');
const list = (ids: readonly string[]) => `${ids.slice(0, 5).join(', ')}${ids.length > 5 ? ', …' : ''}`;

/** `decisions`: the record, newest first, a line each (--json: the entries). */
export async function recordCommand(
  path: string,
  options: FlagValues<typeof STATE_FLAGS>,
  cwd: string,
): Promise<string> {
  const { state, decisions } = await decisionRecord(path, options, cwd);
  if (options.json)
    // Each entry as the record keeps it, its time in ISO 8601.
    return JSON.stringify(
      decisions.map((d) => ({ ...d, at: new Date(d.at).toISOString() })),
      null,
      2,
    );
  if (decisions.length === 0) return `no decision recorded in ${state}`;
  const lines = decisions.map((d) => {
    const moved = [
      d.unlocked.length ? `unlocked ${list(d.unlocked)}` : '',
      d.skipped.length ? `skipped ${list(d.skipped)}` : '',
      d.takenBack.length ? `took back ${list(d.takenBack)}` : '',
      d.sentBefore.length ? `too late for ${list(d.sentBefore.map((s) => s.id))}` : '',
    ].filter(Boolean);
    const who = d.byTimeout ? 'its approval timeout' : safe(d.by);
    const note = d.note ? ` "${safe(d.note)}"` : '';
    return `${new Date(d.at).toISOString()}  ${d.itemId} v${d.version} ${d.decision} by ${who}${note}${moved.length ? `: ${moved.join('; ')}` : ''}`;
  });
  return [`${count(decisions.length, 'decision')} in ${state}, newest first`, ...lines].join('\n');
}

/** A value a person typed, shown on a terminal: no control bytes. */
const safe = (text: string) => text.replace(/[\u0000-\u001f\u007f-\u009f]/g, ' ');
