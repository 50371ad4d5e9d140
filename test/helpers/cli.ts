import { once } from 'node:events';
import { spawn, type ChildProcess } from 'node:child_process';
import { PassThrough } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { onTestFinished } from 'vitest';
import { main } from '../../src/cli/program.js';
import { recordChildWarnings } from './warnings.js';

/** The built CLI, as users run it (`npm test` builds first). */
export const CLI = fileURLToPath(new URL('../../dist/bin/genbatch.js', import.meta.url));

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Environment without the caller's GENBATCH_* variables, plus `extra`. */
export function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const name of Object.keys(env)) if (name.startsWith('GENBATCH_') || name.startsWith('AWS_')) delete env[name];
  // Output is asserted as plain text: a FORCE_COLOR set where the tests run must not colour it.
  delete env.FORCE_COLOR;
  return { ...env, ...extra };
}

export function runCli(args: string[], env: NodeJS.ProcessEnv = cleanEnv(), cwd?: string): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { env, cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => {
      recordChildWarnings(stderr, args);
      resolve({ code, stdout, stderr });
    });
  });
}

/**
 * The same command line run by the CLI's `main` in this process, on streams
 * of its own: what a command does and prints, and its exit code, without a
 * Node start-up per call (0.5 to 0.8 CPU-s; the suite makes hundreds). What
 * only a process shows (signals, its exit, Node's warnings on its stderr,
 * several processes at once) goes through the built CLI: runCli, startCli.
 */
export async function runCliInProcess(
  args: string[],
  env: NodeJS.ProcessEnv = cleanEnv(),
  cwd = process.cwd(),
): Promise<CliResult> {
  const capture = () => {
    const stream = new PassThrough();
    const text = { value: '' };
    stream.on('data', (d) => (text.value += d));
    return { stream, text };
  };
  const out = capture();
  const err = capture();
  const code = await main([process.execPath, CLI, ...args], {
    env,
    cwd,
    stdout: out.stream,
    stderr: err.stream as unknown as NodeJS.WriteStream,
    untilStopped: () => Promise.reject(new Error('genbatch simulate serves until a signal: start it with startCli')),
  });
  // Written synchronously into the PassThroughs; their data events have run by the next turn.
  await new Promise((r) => setImmediate(r));
  return { code, stdout: out.text.value, stderr: err.text.value };
}

export type StartedCli = {
  child: ChildProcess;
  output: () => string;
  waitFor: (pattern: RegExp) => Promise<RegExpMatchArray>;
};

/** Starts the CLI and leaves it running; it is killed when the test ends. */
export function startCli(args: string[], env: NodeJS.ProcessEnv = cleanEnv(), cwd?: string): StartedCli {
  const child = spawn(process.execPath, [CLI, ...args], { env, cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  let err = '';
  child.stderr!.on('data', (d) => {
    out += d;
    err += d;
  });
  child.on('close', () => recordChildWarnings(err, args));
  onTestFinished(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  return {
    child,
    output: () => out,
    waitFor: (pattern) =>
      new Promise((resolve, reject) => {
        const check = () => {
          const m = out.match(pattern);
          if (m) {
            clearInterval(timer);
            resolve(m);
          } else if (child.exitCode !== null) {
            clearInterval(timer);
            reject(new Error(`CLI exited ${child.exitCode} before printing ${pattern}: ${out}`));
          }
        };
        const timer = setInterval(check, 20);
        check();
      }),
  };
}

/**
 * The exit code of a started CLI, or 'still running' once `ms` have passed.
 * A run that might spin goes in its own process: a synchronous loop would
 * hold the test's own thread, and no timeout of the test could end it.
 */
export async function exitCodeWithin(cli: StartedCli, ms: number): Promise<number | 'still running'> {
  if (cli.child.exitCode !== null) return cli.child.exitCode;
  const exited = once(cli.child, 'exit').then(([code]) => code as number);
  const deadline = new Promise<'still running'>((resolve) => setTimeout(() => resolve('still running'), ms).unref());
  return Promise.race([exited, deadline]);
}
