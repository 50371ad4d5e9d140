import { relative } from 'node:path';
import { existsSync } from 'node:fs';
import { blockers, estimate, formatDuration, type Estimate } from '../../estimate/index.js';
import { openStateReadOnly, statePathFor } from '../../store/state-path.js';
import { IssueList, runBudget, type LoadedManifest, type ManifestIssue } from '../../manifest/index.js';
import { combinedLimits, DEFAULT_KEY_LIMITS, formatRate, type KeyLimits, type Rate } from '../../scheduler/limits.js';
import type { ConnectionFlags } from '../connection.js';
import { EXIT, ExitError } from '../exit.js';
import { count, num, table } from '../format.js';
import { issueReport, loadValid, warningReport } from '../../manifest/load-valid.js';
import type { PoolSetup } from '../../api/pool-setup.js';

export { issueReport, loadValid, locate } from '../../manifest/load-valid.js';

/** What talks to the service, loaded by the commands that do: a plain validate reads files only, without the HTTP client (about 0.1 s to load). */
async function service() {
  const [{ connect }, { Catalog }, { setUpPool }, { checkAgainstService }] = await Promise.all([
    import('../connection.js'),
    import('../../api/catalog.js'),
    import('../../api/pool-setup.js'),
    import('../../manifest/online.js'),
  ]);
  return { connect, Catalog, setUpPool, checkAgainstService };
}

function summary(m: LoadedManifest, cwd: string): string {
  const images = m.items.filter((i) => i.type === 'image').length;
  return `${m.source.file}: valid: ${m.items.length} items (${images} image, ${m.items.length - images} video); outputs go to ${m.outputDir.startsWith('s3://') ? m.outputDir : relative(cwd, m.outputDir) || '.'}`;
}

export async function validateCommand(
  path: string,
  opts: ConnectionFlags & { online?: boolean; json?: boolean },
  env: NodeJS.ProcessEnv,
  cwd: string,
): Promise<string> {
  const loaded = await loadValidOrJson(path, cwd, opts.json);
  const asJson = (online: boolean | undefined) =>
    JSON.stringify(
      {
        manifest: loaded.source.file,
        name: loaded.name,
        valid: true,
        items: itemCounts(loaded),
        outputDir: loaded.outputDir,
        online: online ?? null,
        issues: [],
        warnings: loaded.warnings,
      },
      null,
      2,
    );
  const warned = loaded.warnings.length ? `\n${warningReport(loaded.warnings)}` : '';
  if (!opts.online) return opts.json ? asJson(undefined) : `${summary(loaded, cwd)}${warned}`;
  const { connect, Catalog, setUpPool, checkAgainstService } = await service();
  const connection = await connect(opts, env);
  try {
    // With several keys, what they may submit together: each item goes to a key that has its scope.
    const pool = await setUpPool(connection.keys, DEFAULT_KEY_LIMITS, 1);
    if (pool.keys.length === 0)
      throw new ExitError(
        EXIT.stopped,
        `the service refused every key: ${pool.refused.map((r) => `${r.fingerprint} ${r.code}`).join(', ')}`,
      );
    const catalog = await Catalog.fetch(
      pool.keys[0]!.client,
      loaded.items.map((i) => i.type),
    );
    const issues = new IssueList();
    checkAgainstService(loaded.items, loaded.source, catalog, pool.scopes, issues);
    if (issues.count > 0) throw invalid(loaded.source.file, issues, opts.json);
    return opts.json
      ? asJson(true)
      : `${summary(loaded, cwd)}\nonline: every model, kind, mode and allowed value checks out against the service, and the key has the scopes it needs.${warned}`;
  } finally {
    await connection.close();
  }
}

function itemCounts(m: LoadedManifest): { total: number; image: number; video: number } {
  const image = m.items.filter((i) => i.type === 'image').length;
  return { total: m.items.length, image, video: m.items.length - image };
}

/** Exit 2; with --json the issues go to stdout as one document (the one-line reason to stderr). */
function invalid(file: string, issues: IssueList, json: boolean | undefined): ExitError {
  if (!json) return new ExitError(EXIT.usage, issueReport(issues));
  const document = JSON.stringify(
    { manifest: file, valid: false, issues: issues.issues, more: issues.count - issues.issues.length },
    null,
    2,
  );
  return new ExitError(
    EXIT.usage,
    `${issues.count} problem${issues.count === 1 ? '' : 's'} found; nothing was submitted.`,
    document,
  );
}

async function loadValidOrJson(
  path: string,
  cwd: string,
  json: boolean | undefined,
): Promise<LoadedManifest & { warnings: ManifestIssue[] }> {
  if (!json) return loadValid(path, cwd);
  const { loadManifest } = await import('../../manifest/validate.js');
  const { loaded, issues, warnings } = await loadManifest(path, cwd);
  if (!loaded || issues.count > 0) throw invalid(path, issues, true);
  return { ...loaded, warnings };
}

export interface EstimateFlags extends ConnectionFlags {
  json?: boolean;
  state?: string;
  submitRate?: Rate;
  maxImagesInFlight?: number;
  maxVideosInFlight?: number;
  dailyCap?: number;
  maxCredits?: number;
  /** Count the items rejected in review as to be made again (run --redo-rejected). */
  redoRejected?: boolean;
}

/** What a state says of a manifest that has run: each item's state, and the credits charged net. */
interface RunSoFar {
  states: Map<string, string>;
  spent: number;
  /** Done items whose current version was rejected in review. */
  rejected: Set<string>;
}

function runSoFar(m: LoadedManifest, opts: EstimateFlags, cwd: string): RunSoFar | undefined {
  const path = statePathFor(m, opts.state, cwd, Boolean(opts.simulate) && !opts.state);
  if (!existsSync(path)) {
    if (opts.redoRejected)
      throw new ExitError(
        EXIT.usage,
        `--redo-rejected: ${path} does not exist; nothing has run, so nothing was rejected.`,
      );
    return undefined;
  }
  const store = openStateReadOnly(path);
  try {
    const totals = store.attempts.totals();
    const rejected = new Set(opts.redoRejected ? store.reviews.rejectedCurrent() : []);
    return { states: store.itemSync.states(), spent: totals.charged - totals.refunded, rejected };
  } finally {
    store.close();
  }
}

/** Items a run has not sent yet: not in the state, pending, or queued (an attempt committed but never sent). */
const NOT_SENT = new Set(['pending', 'queued']);

export async function estimateCommand(
  path: string,
  opts: EstimateFlags,
  env: NodeJS.ProcessEnv,
  cwd: string,
): Promise<{ text: string; exitCode: number }> {
  const loaded = await loadValid(path, cwd);
  const soFar = runSoFar(loaded, opts, cwd);
  const { connect, Catalog, setUpPool } = await service();
  const connection = await connect(opts, env);
  try {
    // Each key's own limits and cap (its /me, in the service's time); several keys run side by side.
    const pool = await setUpPool(connection.keys, limitsOf(opts), 1);
    if (pool.keys.length === 0)
      throw new ExitError(
        EXIT.stopped,
        `the service refused every key: ${pool.refused.map((r) => `${r.fingerprint} ${r.code}`).join(', ')}`,
      );
    // The balance is the account's, the same for each of its keys.
    const me = pool.accounts[0]!;
    const catalog = await Catalog.fetch(
      pool.keys[0]!.client,
      loaded.items.map((i) => i.type),
    );
    const limits = combinedLimits(pool.keys.map((k) => k.limits));
    const keyCaps = pool.keys.map((k) => k.limits.dailyCap);
    const maxCredits = runBudget(opts.maxCredits, loaded.manifest);
    const of = (items: LoadedManifest['items']) =>
      estimate({
        items,
        catalog,
        prices: loaded.manifest.prices,
        limits,
        keyCaps,
        balance: me.credits,
        perTag: loaded.manifest.budget?.perTag,
        planKeys: pool.keys.map((k, i) => ({
          key: k.fingerprint,
          cap: k.limits.dailyCap,
          submitEveryMs: k.limits.submit.windowMs / k.limits.submit.count,
          slots: { image: k.limits.imagesInFlight, video: k.limits.videosInFlight },
          usedToday: pool.accounts[i]?.usedToday,
        })),
        ...(maxCredits !== undefined ? { maxCredits } : {}),
      });
    const result = of(loaded.items);
    const remaining = soFar
      ? of(loaded.items.filter((i) => NOT_SENT.has(soFar.states.get(i.id) ?? 'pending') || soFar.rejected.has(i.id)))
      : undefined;
    const redo = opts.redoRejected && soFar ? of(loaded.items.filter((i) => soFar.rejected.has(i.id))) : undefined;
    // What the rest of the run needs is judged, not what the whole manifest cost from the start.
    const problems = blockers(remaining ?? result, soFar?.spent ?? 0);
    const exitCode = problems.length ? EXIT.stopped : EXIT.ok;
    const simulated = Boolean(opts.simulate);
    if (opts.json) {
      const json = estimateJson(loaded, result, remaining, soFar?.spent ?? 0, problems, pool, limits, simulated);
      const redoJson = redo ? { redoRejected: { items: redo.items.total, credits: redo.credits.total } } : {};
      return { text: JSON.stringify({ ...json, ...redoJson }, null, 2), exitCode };
    }
    const redoLine = redo
      ? `\nregenerating ${count(redo.items.total, 'item')} rejected in review: ${num(redo.credits.total)} credits (counted in what remains)`
      : '';
    return {
      text: `${formatEstimate(loaded, result, limits, { simulated, remaining, spent: soFar?.spent ?? 0, problems })}${redoLine}`,
      exitCode,
    };
  } finally {
    await connection.close();
  }
}

/** The limits the flags give, over the spec's defaults. */
function limitsOf(opts: EstimateFlags): KeyLimits {
  return {
    ...DEFAULT_KEY_LIMITS,
    ...(opts.submitRate ? { submit: opts.submitRate } : {}),
    ...(opts.maxImagesInFlight ? { imagesInFlight: opts.maxImagesInFlight } : {}),
    ...(opts.maxVideosInFlight ? { videosInFlight: opts.maxVideosInFlight } : {}),
    ...(opts.dailyCap ? { dailyCap: opts.dailyCap } : {}),
  };
}

/** What `estimate --json` prints. */
function estimateJson(
  loaded: LoadedManifest,
  result: Estimate,
  remaining: Estimate | undefined,
  spent: number,
  problems: ReturnType<typeof blockers>,
  pool: PoolSetup,
  limits: KeyLimits,
  simulated: boolean,
): Record<string, unknown> {
  const rest = remaining
    ? {
        remaining: {
          items: remaining.items,
          credits: remaining.credits,
          duration: remaining.duration,
          alreadyCharged: spent,
        },
      }
    : {};
  const keys = pool.keys.map((k) => ({
    fingerprint: k.fingerprint,
    submitRate: formatRate(k.limits.submit),
    imagesInFlight: k.limits.imagesInFlight,
    videosInFlight: k.limits.videosInFlight,
    dailyCap: k.limits.dailyCap,
  }));
  return {
    manifest: loaded.source.file,
    name: loaded.name,
    simulated,
    ...result,
    ...rest,
    blockers: problems,
    limits: {
      submitRate: formatRate(limits.submit),
      imagesInFlight: limits.imagesInFlight,
      videosInFlight: limits.videosInFlight,
    },
    keys,
    refusedKeys: pool.refused,
  };
}

const n = (x: number) => x.toLocaleString('en-US');

/** Days shown one by one; a longer plan says how it goes on. */
const PLAN_DAYS_SHOWN = 14;

/** The plan day by day: each key's items and credits, and the day the run ends. */
function planLines(plan: NonNullable<Estimate['plan']>): string[] {
  const lines = [
    `plan: the last item is sent on key day ${plan.endsOnDay} (day 1 is the day the run starts)${plan.notPlaced ? `; ${n(plan.notPlaced)} items cannot be placed (no price, or over every cap)` : ''}`,
  ];
  for (const d of plan.days.slice(0, PLAN_DAYS_SHOWN))
    lines.push(
      `  day ${d.day}: ${d.keys.map((k) => `${k.key.slice(0, 6)} ${n(k.items)} items, ${n(k.credits)} credits`).join('; ')}`,
    );
  if (plan.days.length > PLAN_DAYS_SHOWN)
    lines.push(`  … ${plan.days.length - PLAN_DAYS_SHOWN} more days (--json lists them all)`);
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

function formatEstimate(
  m: LoadedManifest,
  e: Estimate,
  limits: KeyLimits,
  more: { simulated: boolean; remaining: Estimate | undefined; spent: number; problems: ReturnType<typeof blockers> },
): string {
  const lines = [
    `${m.source.file} (${m.name}): ${n(e.items.total)} items, ${n(e.items.image)} image, ${n(e.items.video)} video. Nothing was submitted.`,
  ];
  if (more.simulated)
    lines.push("simulated: the balance, daily cap and catalog below are the embedded simulator's, not your key's");
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
  if (!e.credits.complete)
    lines.push(
      `${n(e.credits.unpricedItems)} items have no known price: the catalog gives none; add them under prices: in the manifest.`,
    );
  const r = more.remaining;
  if (r)
    lines.push(
      `remaining: ${n(r.items.total)} of ${n(e.items.total)} items not sent yet, ${r.credits.complete ? '' : 'at least '}${n(r.credits.total)} credits, about ${formatDuration(r.duration.seconds)} (${n(more.spent)} credits already charged net)`,
    );
  const judged = r ?? e;
  if (judged.balance)
    lines.push(
      `balance:   ${n(judged.balance.credits)} credits, ${judged.balance.enough ? 'enough' : `short by ${n(judged.credits.total - judged.balance.credits)}`}`,
    );
  const over = e.dailyCap.keys > 1 ? ` over ${e.dailyCap.keys} keys` : '';
  lines.push(
    `daily cap: ${n(e.dailyCap.credits)} credits per key day${over}: ${e.dailyCap.keyDays} key day${e.dailyCap.keyDays === 1 ? '' : 's'}`,
  );
  if (judged.budget) {
    const within = !more.problems.some((p) => p.reason === 'budget');
    lines.push(
      `budget:    ${n(judged.budget.maxCredits)} credits, ${within ? 'within budget' : `over budget: the run stops after about ${n(judged.budget.itemsWithin)} items`}`,
    );
  }
  lines.push(
    `time:      about ${formatDuration(e.duration.seconds)}, limited by the ${e.duration.limitedBy}`,
    `           (submissions ${formatRate(limits.submit)}; ${limits.imagesInFlight} images in flight at ~50 s, ${limits.videosInFlight} videos at ~5.5 min, the spec's typical durations)`,
  );
  if (e.tags.length) lines.push('', tagTable(e.tags));
  if (e.plan) lines.push('', ...planLines(e.plan));
  for (const p of more.problems) lines.push(`cannot run as planned (${p.reason}): ${p.message}`);
  return lines.join('\n');
}
