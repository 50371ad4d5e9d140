import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = fileURLToPath(new URL('..', import.meta.url));
const cli = join(root, 'dist', 'bin', 'genbatch.js');
const probe = join(root, 'bench', 'rss-probe.mjs');

/**
 * Runs the built CLI as a user would; returns wall time, peak RSS, CPU seconds and its output.
 * `during(child, startedAt)` may act on the running process (signal it once it has done enough).
 */
export function measureCli(args, { cwd = root, env = {}, during } = {}) {
  const rssFile = join(mkdtempSync(join(tmpdir(), 'genbatch-bench-')), 'rss');
  const started = process.hrtime.bigint();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', probe, cli, ...args], {
      cwd,
      env: { ...process.env, ...env, BENCH_RSS_FILE: rssFile },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    during?.(child, Date.now());
    child.on('close', (code) => {
      const wallSeconds = Number(process.hrtime.bigint() - started) / 1e9;
      // A process killed by SIGKILL writes no usage.
      const usage = existsSync(rssFile) ? JSON.parse(readFileSync(rssFile, 'utf8')) : { maxRss: NaN, cpuSeconds: NaN };
      resolve({
        code,
        stdout,
        stderr,
        wallSeconds,
        closedAt: Date.now(),
        peakRssMb: usage.maxRss / 1024 / 1024,
        cpuSeconds: usage.cpuSeconds,
      });
    });
  });
}

export const fmt = (n, digits = 2) => n.toFixed(digits);

/** When the newest file under `dir` was last written (epoch ms): a run's report is the last thing it writes. */
export function newestWrite(dir) {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) newest = Math.max(newest, statSync(join(entry.parentPath ?? entry.path, entry.name)).mtimeMs);
  }
  return newest;
}

/** "min a / median b" of three or more figures. */
export function minMedian(values, digits = 2, unit = '') {
  const sorted = [...values].sort((a, b) => a - b);
  return `min ${fmt(sorted[0], digits)}${unit} / median ${fmt(sorted[Math.floor(sorted.length / 2)], digits)}${unit}`;
}

/** A manifest of `rows` CSV rows (one image each) in a fresh dir; returns the dir. */
export async function writeCatalog(rows, name = 'big', topLevel = '') {
  const { createWriteStream, writeFileSync } = await import('node:fs');
  const { once } = await import('node:events');
  const dir = mkdtempSync(join(tmpdir(), 'genbatch-bench-catalog-'));
  const csv = createWriteStream(join(dir, 'products.csv'));
  csv.write('sku,title,color\n');
  const colors = ['sage green', 'terracotta', 'ink blue', 'oat white'];
  for (let i = 0; i < rows; i++) {
    if (!csv.write(`SKU-${String(i).padStart(6, '0')},"Ceramic item ${i}, hand glazed",${colors[i % colors.length]}\n`))
      await once(csv, 'drain');
  }
  csv.end();
  await once(csv, 'finish');
  writeFileSync(
    join(dir, `${name}.yaml`),
    `version: 1
name: ${name}
defaults: { type: image, model: studio-xl, aspectRatio: "4:5", resolution: 2K }
${topLevel}items:
  - rows: products.csv
    id: "{{sku}}"
    prompt: "{{title}} in {{color}}, studio product photo"
`,
  );
  return dir;
}
