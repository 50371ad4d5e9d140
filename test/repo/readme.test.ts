import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createHash } from 'node:crypto';
import { cpSync, mkdtempSync, readFileSync, readdirSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { type RunningSimulator, startSimulator } from '../../src/simulator/index.js';
import { cleanEnv } from '../helpers/cli.js';
import { recordChildWarnings } from '../helpers/warnings.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** README sections whose shell blocks cannot run against the simulator, and why. */
const NOT_RUN: Record<string, string> = {
  'The two commands': 'CI runs them itself: .ci/run is npm ci, npm test (and the demo on another Node line)',
  'Outputs in a bucket': 'it needs a bucket: test/bucket/ runs the same commands against an S3 server',
};

interface Block {
  section: string;
  lines: string[];
}

/** Every ```sh block of the README, with its section and its commands (comments and blank lines dropped). */
function shellBlocks(text: string): Block[] {
  const blocks: Block[] = [];
  let section = '';
  let open: Block | undefined;
  for (const line of text.split('\n')) {
    if (open) {
      if (line.startsWith('```')) {
        blocks.push(open);
        open = undefined;
      } else {
        const command = line.replace(/\s+#\s.*$/, '').trim();
        if (command) open.lines.push(command);
      }
    } else if (line.startsWith('## ')) section = line.slice(3).trim();
    else if (line.trim() === '```sh') open = { section, lines: [] };
  }
  return blocks;
}

/** A command that serves until stopped: run until it prints where it serves, then stopped. */
const SERVES = /^genbatch (review|metrics|simulate)\b/;

interface Shell {
  dir: string;
  env: NodeJS.ProcessEnv;
  exports: string[];
  /** The base URL of the simulator standing in for the service. */
  baseUrl: string;
  apiKey: string;
}

function sh(shell: Shell, command: string): ChildProcess {
  const script = [...shell.exports, command].join('\n');
  return spawn('sh', ['-c', script], { cwd: shell.dir, env: shell.env, stdio: ['ignore', 'pipe', 'pipe'] });
}

async function finished(child: ChildProcess, command: string): Promise<{ code: number | null; output: string }> {
  let output = '';
  let stderr = '';
  child.stdout!.on('data', (d) => (output += d));
  child.stderr!.on('data', (d) => {
    output += d;
    stderr += d;
  });
  const [code] = (await once(child, 'close')) as [number | null];
  recordChildWarnings(stderr, [command]);
  return { code, output };
}

/** Starts a serving command (its port made 0: a test never takes a fixed one) and waits for its address. */
async function served(shell: Shell, command: string): Promise<{ child: ChildProcess; url: string }> {
  const child = sh(shell, `exec ${command.replace(/\s*&$/, '').replace(/--port \d+/, '--port 0')}`);
  let output = '';
  child.stdout!.on('data', (d) => (output += d));
  child.stderr!.on('data', (d) => (output += d));
  onTestFinished(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  const url = await new Promise<string>((found, failed) => {
    const look = setInterval(() => {
      const m = /(http:\/\/127\.0\.0\.1:\d+\S*)/.exec(output);
      if (m) found(m[1]!);
      else if (child.exitCode !== null) failed(new Error(`${command} exited ${child.exitCode}: ${output}`));
      if (m || child.exitCode !== null) clearInterval(look);
    }, 20);
  });
  return { child, url };
}

/** One line of a block, as the user would type it: the URL and key of the simulator standing in are the only changes. */
async function runLine(shell: Shell, line: string, servers: ChildProcess[]): Promise<void> {
  const assignment = /^export (\w+)=(.*)$/.exec(line);
  if (assignment) {
    const [, name, value] = assignment;
    if (name === 'GENBATCH_BASE_URL') shell.exports.push(`export GENBATCH_BASE_URL=${shell.baseUrl}`);
    else if (name === 'GENBATCH_API_KEY' && value!.includes('…'))
      shell.exports.push(`export GENBATCH_API_KEY=${shell.apiKey}`);
    else shell.exports.push(line);
    return;
  }
  if (SERVES.test(line)) {
    const { child, url } = await served(shell, line);
    if (line.startsWith('genbatch simulate') && line.endsWith('&')) {
      // The stand-in service, left running for the lines after it.
      shell.baseUrl = /(http:\/\/127\.0\.0\.1:\d+\/v1)/.exec(url)![1]!;
      servers.push(child);
      return;
    }
    if (line.startsWith('genbatch review')) expect((await fetch(url)).status, url).toBe(200);
    child.kill('SIGINT');
    const [code] = (await once(child, 'exit')) as [number | null];
    expect(code, line).toBe(0);
    return;
  }
  const { code, output } = await finished(sh(shell, line), line);
  expect(code, `${line}\n${output}`).toBe(0);
}

describe("README.md's commands, run as they are written", () => {
  const blocks = shellBlocks(readFileSync(join(root, 'README.md'), 'utf8'));

  it('names every section it does not run, with why, and runs the others', () => {
    const sections = new Set(blocks.map((b) => b.section));
    for (const section of Object.keys(NOT_RUN)) expect(sections, section).toContain(section);
    expect(blocks.filter((b) => !(b.section in NOT_RUN)).length).toBeGreaterThanOrEqual(8);
  });

  // The user's checkout, which the blocks share in order (review comes after a run): the manifests, and the
  // install's node_modules (genbatch at node_modules/.bin). A block that starts a service of its own is a trial
  // apart, in a checkout of its own.
  const checkout = () => {
    const dir = mkdtempSync(join(tmpdir(), 'genbatch-readme-'));
    cpSync(join(root, 'manifests'), join(dir, 'manifests'), { recursive: true });
    symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'));
    return dir;
  };
  let shared: string | undefined;
  // The service the shared checkout's runs go to, all along (its state knows this service's jobs).
  let service: RunningSimulator | undefined;
  beforeAll(async () => {
    // It stands in for the real service: it does not say it is a simulator, so the runs' state is a real run's.
    service = await startSimulator({ port: 0, timeScale: 600, announce: false });
  });
  afterAll(async () => {
    await service?.close();
  });

  it("the trial, then the same manifest against a service that does not say it is a simulator: everything is made and charged, the trial's files untouched", {
    timeout: 90_000,
  }, async () => {
    const trial = blocks.find((b) => b.lines.some((l) => /^genbatch simulate .*&$/.test(l)))!;
    const dir = checkout();
    const env = cleanEnv({ PATH: `${join(dir, 'node_modules', '.bin')}:${process.env.PATH}` });
    const shell: Shell = { dir, env, exports: [], baseUrl: '', apiKey: '' };
    const servers = stoppedAtEnd();
    for (const line of trial.lines) await runLine(shell, line, servers);
    const trialFiles = filesUnder(dir);
    expect([...trialFiles.keys()].filter((f) => f.startsWith('out/demo.simulated/')).length).toBeGreaterThan(0);

    // The real service stands in: a simulator of its own that says nothing of being one.
    const real = await startSimulator({ port: 0, timeScale: 600, announce: false });
    onTestFinished(() => real.close());
    const exports = [
      ...shell.exports.filter((e) => !/^export GENBATCH_(BASE_URL|API_KEY)=/.test(e)),
      `export GENBATCH_BASE_URL=${real.baseUrl}`,
      `export GENBATCH_API_KEY=${real.apiKey}`,
    ];
    const line = trial.lines.find((l) => l.startsWith('genbatch run '))!;
    const { code, output } = await finished(sh({ ...shell, exports }, line), line);
    expect(code, output).toBe(0);
    const items = real.service.ledger.of('charge').length;
    expect(items).toBeGreaterThan(0);
    const after = filesUnder(dir);
    for (const [file, hash] of trialFiles) expect(after.get(file), file).toBe(hash);
    const made = [...after.keys()].filter((f) => f.startsWith('out/demo/') && !/results|index\.html/.test(f));
    expect(made.length).toBeGreaterThanOrEqual(items);
  });

  it.each(blocks.filter((b) => !(b.section in NOT_RUN)).map((b, i) => [`${i + 1}, in "${b.section}"`, b] as const))(
    'block %s: every command does what it says against the simulator',
    { timeout: 60_000 },
    async (_name, block) => {
      const ownService = block.lines.some((l) => /^genbatch simulate .*&$/.test(l));
      const dir = ownService ? checkout() : (shared ??= checkout());
      // As after the first real run's exports: genbatch on PATH, a key and the service's URL set.
      const env = cleanEnv({
        PATH: `${join(dir, 'node_modules', '.bin')}:${process.env.PATH}`,
        GENBATCH_API_KEY: service!.apiKey,
        GENBATCH_BASE_URL: service!.baseUrl,
      });
      const shell: Shell = { dir, env, exports: [], baseUrl: service!.baseUrl, apiKey: service!.apiKey };
      const servers = stoppedAtEnd();
      for (const line of block.lines) await runLine(shell, line, servers);
    },
  );
});

/** Every file under a checkout (not its node_modules), by its path there, with a hash of its bytes. */
function filesUnder(dir: string): Map<string, string> {
  const files = new Map<string, string>();
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    const name = relative(dir, path);
    if (name.startsWith('node_modules')) continue;
    files.set(name, createHash('sha256').update(readFileSync(path)).digest('hex'));
  }
  return files;
}

/** Serving commands a test leaves running, each stopped (SIGINT) when the test ends. */
function stoppedAtEnd(): ChildProcess[] {
  const servers: ChildProcess[] = [];
  onTestFinished(async () => {
    for (const s of servers) {
      s.kill('SIGINT');
      if (s.exitCode === null) await once(s, 'exit');
    }
  });
  return servers;
}
