import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSqlite } from '../../src/store/driver.js';
import { expect } from 'vitest';
import { outputBytes } from '../../src/simulator/storage.js';
import type { RunningSimulator } from '../../src/simulator/index.js';
import type { LedgerEvent } from '../../src/simulator/ledger.js';
import { CLI, cleanEnv, runCliInProcess, startCli, type CliResult, type StartedCli } from './cli.js';
import { recordChildWarnings } from './warnings.js';

export const TIME_SCALE = 600;

export interface RunWorkspace {
  dir: string;
  statePath: string;
  outDir: string;
  /** `genbatch run` by the CLI's main in this process (see runCliInProcess). */
  run(extra?: string[]): Promise<CliResult>;
  /** The same run, left going (killed when the test ends). */
  start(extra?: string[]): StartedCli;
  args(extra?: string[]): string[];
  env: NodeJS.ProcessEnv;
}

/** A manifest in a temp dir against a test simulator with the same time scale: `run` by the CLI's main in this process, `start` by the built CLI. */
export function workspace(
  sim: RunningSimulator,
  manifest: string,
  files: Record<string, string | Buffer> = {},
  timeScale = TIME_SCALE,
): RunWorkspace {
  const dir = mkdtempSync(join(tmpdir(), 'genbatch-run-'));
  writeFileSync(join(dir, 'm.yaml'), manifest);
  for (const [name, body] of Object.entries(files)) writeFileSync(join(dir, name), body);
  const env = cleanEnv({ GENBATCH_BASE_URL: sim.baseUrl, GENBATCH_API_KEY: sim.apiKey });
  const args = (extra: string[] = []) => ['run', 'm.yaml', '--time-scale', String(timeScale), ...extra];
  return {
    dir,
    statePath: join(dir, '.genbatch', 'm.sqlite'),
    outDir: join(dir, 'out', 'm'),
    env,
    args,
    run: (extra = []) => runCliInProcess(args(extra), env, dir),
    start: (extra = []) => startCli(args(extra), env, dir),
  };
}

export function imageManifest(count: number, prompt = (i: number) => `product ${i}`, extra = ''): string {
  const items = Array.from({ length: count }, (_, i) => `  - { id: item-${i}, prompt: "${prompt(i)}" }`).join('\n');
  return `version: 1\ndefaults: { model: studio-lite }\n${extra}items:\n${items}\n`;
}

interface StateRow {
  id: string;
  state: string;
  error_code: string | null;
  error_message: string | null;
}

export function readState(statePath: string): {
  items: StateRow[];
  outputs: {
    item_id: string;
    job_id: string;
    idx: number;
    path: string;
    sha256: string;
    bytes: number;
    published_to: string | null;
  }[];
  attempts: { item_id: string; n: number; job_id: string | null; idempotency_key: string; status: string }[];
} {
  const db = openSqlite(statePath, { readonly: true });
  try {
    return {
      items: db.prepare('SELECT id, state, error_code, error_message FROM items ORDER BY seq').all() as StateRow[],
      outputs: db.prepare('SELECT * FROM outputs').all() as never,
      attempts: db.prepare('SELECT * FROM attempts').all() as never,
    };
  } finally {
    db.close();
  }
}

/**
 * The proof a user relies on: the simulator charged each prompt at most once
 * per attempt that the runner recorded, and every output on disk has exactly
 * the bytes the simulator served for its job.
 */
export function expectNoDoubleChargeAndVerifiedOutputs(sim: RunningSimulator, ws: RunWorkspace): void {
  expectKeyNowhere(ws.dir, sim.apiKey);
  const ledger = sim.service.ledger;
  const charges = ledger.of('charge');
  const byKey = new Map<string, number>();
  for (const c of charges) byKey.set(c.idempotencyKey, (byKey.get(c.idempotencyKey) ?? 0) + 1);
  for (const [key, n] of byKey) expect(n, `idempotency key ${key} charged ${n} times`).toBe(1);
  const state = readState(ws.statePath);
  const jobsOfAttempts = new Set(state.attempts.map((a) => a.job_id).filter(Boolean));
  for (const c of charges)
    expect(jobsOfAttempts.has(c.jobId), `charged job ${c.jobId} is unknown to the state`).toBe(true);
  for (const out of state.outputs.filter((o) => o.sha256)) {
    const file = join(ws.outDir, out.path);
    expect(existsSync(file), file).toBe(true);
    const bytes = readFileSync(file);
    const job = sim.service.jobs.byId.get(out.job_id)!;
    const served = outputBytes(job, out.idx);
    expect(createHash('sha256').update(bytes).digest('hex')).toBe(out.sha256);
    expect(bytes.equals(served), `${out.path} has the bytes of ${out.job_id}`).toBe(true);
  }
}

/** A request that moves the run on (a submission, a poll, an upload, a download), not the start-up's /me and /models. */
function isWork(event: LedgerEvent): boolean {
  if (event.kind === 'request') return !/^\/(me|models)\b/.test(event.path);
  return event.kind === 'upload-put' || event.kind === 'download' || event.kind === 'charge';
}

export interface KillLoopOptions {
  /** Give up (and fail) if the kills have not all landed by then. */
  maxSeconds?: number;
}

/**
 * Starts the run and SIGKILLs it while it has work in flight, until `kills`
 * kills have landed: each life is killed when the simulator records its
 * 1st to 3rd request that moves the run on (half the time at that very
 * instant, before the answer leaves; otherwise up to 60 ms later). A run
 * that finishes before all kills land fails the loop: the workload is too
 * small for the kills asked. Then the same command runs to completion once.
 */
export async function killLoop(
  sim: RunningSimulator,
  ws: RunWorkspace,
  kills: number,
  { maxSeconds = 120 }: KillLoopOptions = {},
): Promise<{ kills: number; final: CliResult }> {
  const deadline = Date.now() + maxSeconds * 1000;
  let landed = 0;
  while (landed < kills) {
    if (Date.now() > deadline) throw new Error(`only ${landed} of ${kills} kills landed in ${maxSeconds} s`);
    const args = ws.args();
    const child = spawn(process.execPath, [CLI, ...args], {
      cwd: ws.dir,
      env: ws.env,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    const closed = once(child, 'close'); // subscribed now: a life that ends by itself must not be waited for forever
    const alive = () => child.exitCode === null && child.signalCode === null;
    let killed = false;
    const kill = () => {
      if (!killed && alive()) {
        killed = child.kill('SIGKILL');
        if (killed) landed++;
      }
    };
    const killAt = 1 + Math.floor(Math.random() * 3);
    const atOnce = Math.random() < 0.5;
    let seen = 0;
    const unwatch = sim.service.ledger.watch((event) => {
      if (!isWork(event) || ++seen !== killAt) return;
      if (atOnce) kill();
      else setTimeout(kill, Math.random() * 60);
    });
    const [code] = (await closed) as [number | null];
    unwatch();
    recordChildWarnings(stderr, args);
    if (!killed)
      throw new Error(
        `the run ended by itself (exit ${code}) after ${landed} of ${kills} kills: the workload is too small for this many kills\n${stderr}`,
      );
  }
  return { kills: landed, final: await ws.run() };
}

/** The API key appears in no file the run wrote: state (and its WAL), log, outputs. */
export function expectKeyNowhere(dir: string, key: string): void {
  const needle = Buffer.from(key);
  let scanned = 0;
  for (const name of readdirSync(dir, { recursive: true }) as string[]) {
    const path = join(dir, name);
    // A file written meanwhile by a helper still at work (a thumbnail's .part, renamed into place) may be gone
    // by the time it is read: what is gone holds no key, and the file it became is read if it was listed.
    const bytes = readIfThere(path);
    if (!bytes) continue;
    scanned++;
    expect(bytes.includes(needle), `the API key is in ${name}`).toBe(false);
  }
  expect(scanned).toBeGreaterThan(0);
}

/** A file's bytes, or undefined when it is not a file (a folder), or no longer there. */
function readIfThere(path: string): Buffer | undefined {
  try {
    return statSync(path).isFile() ? readFileSync(path) : undefined;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

/** What a run leaves beside its outputs: the results export, the gallery, sidecars. */
export const REPORT_FILE = /^(results\.(jsonl|csv)|index\.html|.+\.json)$/;

/** The generated files in an output dir, without the report a run writes beside them. */
export const outputFilesIn = (dir: string) => readdirSync(dir).filter((f) => !REPORT_FILE.test(f));
