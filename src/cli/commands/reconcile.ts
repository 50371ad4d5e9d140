import type { ReconcileReport } from '../../library/reconcile.js';
import { reconcileState } from '../../library/reconcile.js';
import type { FlagValues } from '../../options/flag.js';
import type { RECONCILE_FLAGS } from '../../options/flags.js';
import { EXIT } from '../../library/outcome.js';
import { count, num, table } from '../format.js';

/** Items an unknown job is listed for in the table; --json lists them all. */
const SHOWN = 20;

/**
 * Compares the state with the service's job list, for every key given:
 * nothing is submitted and nothing changes. Exit 0 when they agree, 1 when
 * there are differences.
 */
export async function reconcileCommand(
  path: string,
  options: FlagValues<typeof RECONCILE_FLAGS>,
  env: NodeJS.ProcessEnv,
  cwd: string,
): Promise<{ text: string; exitCode: number }> {
  const { state, report } = await reconcileState(path, options, env, cwd);
  const exitCode = report.differences > 0 ? EXIT.incomplete : EXIT.ok;
  return {
    text: options.json ? JSON.stringify({ state, ...report }, null, 2) : reconcileText(report),
    exitCode,
  };
}

function reconcileText(r: ReconcileReport): string {
  const lines: string[] = [];
  lines.push(
    `compared ${count(
      r.keys.reduce((n, k) => n + k.jobs, 0),
      'listed job',
    )} of ${count(r.keys.length, 'key')} with the state, since ${r.period.from ?? 'the beginning (the state has no session)'}`,
  );
  for (const k of r.keys)
    if (!k.complete)
      lines.push(
        `key ${k.key}: the list was not read to its end (${k.stoppedBecause}); jobs it did not show are not judged lost`,
      );
  const c = r.credits;
  lines.push(
    `credits per the service: ${num(c.service.charged)} charged, ${num(c.service.refunded)} refunded, ${num(c.service.net)} net${c.service.jobsWithoutCharge ? ` (${count(c.service.jobsWithoutCharge, 'job')} show no charge)` : ''}`,
  );
  lines.push(
    `credits per the state:   ${num(c.state.charged)} charged, ${num(c.state.refunded)} refunded, ${num(c.state.net)} net${c.difference ? `; the service's net is ${c.difference > 0 ? 'higher' : 'lower'} by ${num(Math.abs(c.difference))}` : ''}`,
  );
  lines.push(...unknownLines(r));
  if (r.foundMaybeAccepted.length)
    lines.push(
      `${count(r.foundMaybeAccepted.length, 'item')} left "maybe accepted" ${r.foundMaybeAccepted.length === 1 ? 'has its job' : 'have their jobs'} in the list: the next run resends the same idempotency key and finds ${r.foundMaybeAccepted.length === 1 ? 'it' : 'them'}, paying nothing`,
    );
  if (r.lost.length) {
    lines.push(`${count(r.lost.length, 'job')} the state holds as accepted that the service does not list:`);
    lines.push(
      table(
        ['item', 'attempt', 'job', 'key'],
        r.lost.slice(0, SHOWN).map((l) => [l.item, String(l.attempt), l.jobId, l.key ?? '']),
      ),
    );
  }
  for (const o of r.otherOrigins)
    lines.push(
      `${count(o.jobs, 'job')} from origin "${o.origin}" (not the API) counted apart: ${num(o.charged)} credits`,
    );
  if (r.beforePeriod)
    lines.push(`${count(r.beforePeriod, 'API job')} created before the run's first session: not compared`);
  lines.push(
    r.differences === 0
      ? 'no differences: every paid job is in the state, and every accepted attempt is in the list'
      : `${count(r.differences, 'difference')}`,
  );
  return lines.join('\n');
}

/** Paid jobs the state does not know: the first of them, with the item each most likely belongs to. */
function unknownLines(r: ReconcileReport): string[] {
  if (!r.unknown.length) return [];
  const lines = [`${count(r.unknown.length, 'job')} charged that the state does not know:`];
  lines.push(
    table(
      ['job', 'key', 'status', 'created', 'charged', 'likely item'],
      r.unknown
        .slice(0, SHOWN)
        .map((j) => [
          j.id,
          j.key,
          j.status,
          j.createdAt ?? '',
          j.charged === null ? '' : num(j.charged),
          j.likelyItem ?? '',
        ]),
    ),
  );
  if (r.unknown.length > SHOWN) lines.push(`… and ${r.unknown.length - SHOWN} more (reconcile --json lists them all)`);
  return lines;
}
