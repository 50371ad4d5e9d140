import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = fileURLToPath(new URL('..', import.meta.url));
const cli = join(root, 'dist', 'cli', 'main.js');
const probe = join(root, 'bench', 'rss-probe.mjs');

/** Runs the built CLI as a user would; returns wall time, peak RSS, CPU seconds and its output. */
export function measureCli(args, { cwd = root, env = {} } = {}) {
  const rssFile = join(mkdtempSync(join(tmpdir(), 'genbatch-bench-')), 'rss');
  const started = process.hrtime.bigint();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', probe, cli, ...args], { cwd, env: { ...process.env, ...env, BENCH_RSS_FILE: rssFile }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => {
      const wallSeconds = Number(process.hrtime.bigint() - started) / 1e9;
      const usage = JSON.parse(readFileSync(rssFile, 'utf8'));
      resolve({ code, stdout, stderr, wallSeconds, peakRssMb: usage.maxRss / 1024 / 1024, cpuSeconds: usage.cpuSeconds });
    });
  });
}

export const fmt = (n, digits = 2) => n.toFixed(digits);
