import { relative } from 'node:path';
import { Catalog } from '../../api/catalog.js';
import { estimate, formatDuration, type Estimate } from '../../estimate/index.js';
import { IssueList, type LoadedManifest } from '../../manifest/index.js';
import { checkAgainstService } from '../../manifest/online.js';
import { DEFAULT_KEY_LIMITS, formatRate, type KeyLimits, type Rate } from '../../scheduler/limits.js';
import { connect, type ConnectionFlags } from '../connection.js';
import { EXIT, ExitError } from '../exit.js';
import { table } from '../format.js';
import { issueReport, loadValid } from './manifest-load.js';

export { issueReport, loadValid, locate } from './manifest-load.js';

function summary(m: LoadedManifest, cwd: string): string {
  const images = m.items.filter((i) => i.type === 'image').length;
  return `${m.source.file}: valid: ${m.items.length} items (${images} image, ${m.items.length - images} video); outputs go to ${relative(cwd, m.outputDir) || '.'}`;
}

export async function validateCommand(path: string, opts: ConnectionFlags & { online?: boolean }, env: NodeJS.ProcessEnv, cwd: string): Promise<string> {
  const loaded = await loadValid(path, cwd);
  if (!opts.online) return summary(loaded, cwd);
  const connection = await connect(opts, env);
  try {
    const me = await connection.client.me();
    const catalog = await Catalog.fetch(connection.client, loaded.items.map((i) => i.type));
    const issues = new IssueList();
    checkAgainstService(loaded.items, loaded.source, catalog, me.scopes, issues);
    if (issues.count > 0) throw new ExitError(EXIT.usage, issueReport(issues));
    return `${summary(loaded, cwd)}\nonline: every model, kind, mode and allowed value checks out against the service, and the key has the scopes it needs.`;
  } finally {
    await connection.close();
  }
}

export interface EstimateFlags extends ConnectionFlags {
  json?: boolean;
  submitRate?: Rate;
  maxImagesInFlight?: number;
  maxVideosInFlight?: number;
  dailyCap?: number;
  maxCredits?: number;
}

export async function estimateCommand(path: string, opts: EstimateFlags, env: NodeJS.ProcessEnv, cwd: string): Promise<string> {
  const loaded = await loadValid(path, cwd);
  const connection = await connect(opts, env);
  let result: Estimate;
  try {
    const me = await connection.client.me();
    const catalog = await Catalog.fetch(connection.client, loaded.items.map((i) => i.type));
    const limits: KeyLimits = {
      ...DEFAULT_KEY_LIMITS,
      ...(opts.submitRate ? { submit: opts.submitRate } : {}),
      ...(opts.maxImagesInFlight ? { imagesInFlight: opts.maxImagesInFlight } : {}),
      ...(opts.maxVideosInFlight ? { videosInFlight: opts.maxVideosInFlight } : {}),
      dailyCap: opts.dailyCap ?? me.dailyCap ?? DEFAULT_KEY_LIMITS.dailyCap,
    };
    const maxCredits = opts.maxCredits ?? loaded.manifest.budget?.maxCredits;
    result = estimate({ items: loaded.items, catalog, prices: loaded.manifest.prices, limits, balance: me.credits, ...(maxCredits !== undefined ? { maxCredits } : {}) });
    if (opts.json) return JSON.stringify({ manifest: loaded.source.file, name: loaded.name, ...result, limits: { submitRate: formatRate(limits.submit), imagesInFlight: limits.imagesInFlight, videosInFlight: limits.videosInFlight } }, null, 2);
    return formatEstimate(loaded, result, limits);
  } finally {
    await connection.close();
  }
}

const n = (x: number) => x.toLocaleString('en-US');

function formatEstimate(m: LoadedManifest, e: Estimate, limits: KeyLimits): string {
  const lines = [`${m.source.file} (${m.name}): ${n(e.items.total)} items, ${n(e.items.image)} image, ${n(e.items.video)} video. Nothing was submitted.`, ''];
  const rows = e.models.map((c) => [c.model, c.type, n(c.items), c.each !== undefined ? n(c.each) : c.unpriced === c.items ? '?' : 'varies', c.unpriced ? `${n(c.credits)} + ${n(c.unpriced)} unpriced` : n(c.credits), c.source]);
  rows.push(['total', '', n(e.items.total), '', e.credits.complete ? n(e.credits.total) : `at least ${n(e.credits.total)}`, '']);
  lines.push(table(['model', 'type', 'items', 'each', 'credits', 'price from'], rows), '');
  if (!e.credits.complete) lines.push(`${n(e.credits.unpricedItems)} items have no known price: the catalog gives none; add them under prices: in the manifest.`);
  if (e.balance) lines.push(`balance:   ${n(e.balance.credits)} credits, ${e.balance.enough ? 'enough' : `short by ${n(e.credits.total - e.balance.credits)}`}`);
  lines.push(`daily cap: ${n(e.dailyCap.credits)} credits per key day: ${e.dailyCap.keyDays} key day${e.dailyCap.keyDays === 1 ? '' : 's'}`);
  if (e.budget) lines.push(`budget:    ${n(e.budget.maxCredits)} credits, ${e.budget.within ? 'within budget' : `over budget: the run stops after about ${n(e.budget.itemsWithin)} items`}`);
  lines.push(
    `time:      about ${formatDuration(e.duration.seconds)}, limited by the ${e.duration.limitedBy}`,
    `           (submissions ${formatRate(limits.submit)}; ${limits.imagesInFlight} images in flight at ~50 s, ${limits.videosInFlight} videos at ~5.5 min, the spec's typical durations)`,
  );
  return lines.join('\n');
}
