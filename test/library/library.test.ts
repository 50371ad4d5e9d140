import { execFile, spawn } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { publint } from 'publint';
import { beforeAll, describe, expect, it } from 'vitest';
import { estimate, openRun, run, validate } from '../../src/library/index.js';
import { expectNoDoubleChargeAndVerifiedOutputs, imageManifest, workspace } from '../helpers/run.js';
import { rejection, startTestSim } from '../helpers/sim.js';

const ROOT = resolve(import.meta.dirname, '../..');
const TIME_SCALE = 600;

/** A program's folder with genbatch installed in it (a link to this package, as `npm link` makes). */
let home: string;
beforeAll(() => {
  home = mkdtempSync(join(tmpdir(), 'genbatch-consumer-'));
  mkdirSync(join(home, 'node_modules'));
  symlinkSync(ROOT, join(home, 'node_modules', 'genbatch'), 'dir');
  writeFileSync(join(home, 'package.json'), '{ "name": "pipeline", "private": true, "type": "module" }\n');
  copyFileSync(join(import.meta.dirname, 'consumer.mjs'), join(home, 'consumer.mjs'));
  copyFileSync(join(import.meta.dirname, 'consumer.ts'), join(home, 'consumer.ts'));
});

interface Seen {
  valid: boolean;
  items: { total: number };
  estimate: { exitCode?: number; credits?: number; rejected?: number };
  kinds: Record<string, number>;
  itemless: string[];
  exitCode: number;
  stop: string | null;
  done: number;
  charged: number;
  results: boolean;
}

/** Runs the consumer in a process of its own; resolves once that process has ended by itself (no exit call in it). */
async function consume(config: object): Promise<{ seen: Seen; stdout: string; stderr: string; code: number | null }> {
  const ended = await program(['consumer.mjs', JSON.stringify(config)]);
  try {
    return { ...ended, seen: JSON.parse(ended.stdout) as Seen };
  } catch {
    throw new Error(`not one JSON line: ${ended.stdout}${ended.stderr}`);
  }
}

/** A Node program in the consumer's folder, once it has ended. */
function program(args: string[]): Promise<{ stdout: string; stderr: string; code: number | null }> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, args, { cwd: home });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdout += d;
    });
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    // A guard, not a measure: a process held open by a timer, a socket or a database never ends.
    const guard = setTimeout(() => {
      child.kill('SIGKILL');
      fail(new Error(`the program did not end by itself; it printed: ${stdout}${stderr}`));
    }, 60_000);
    child.on('close', (code) => {
      clearTimeout(guard);
      done({ stdout, stderr, code });
    });
  });
}

describe('genbatch as a library', () => {
  it('is imported by its name; run() streams typed events naming their items, prints nothing, and the process ends by itself', async () => {
    const t = await startTestSim({ timeScale: TIME_SCALE });
    const ws = workspace(t.sim, imageManifest(6), {}, TIME_SCALE);
    const { seen, stdout, stderr, code } = await consume({
      manifest: 'm.yaml',
      cwd: ws.dir,
      baseUrl: t.sim.baseUrl,
      apiKey: t.sim.apiKey,
      timeScale: TIME_SCALE,
    });
    expect(code).toBe(0);
    expect(stderr).toBe('');
    expect(stdout.trim().split('\n')).toHaveLength(1);
    expect(seen.valid).toBe(true);
    expect(seen.items.total).toBe(6);
    expect(seen.estimate.exitCode).toBe(0);
    expect(seen.exitCode).toBe(0);
    expect(seen.done).toBe(6);
    expect(seen.results).toBe(true);
    for (const kind of ['started', 'submitted', 'accepted', 'polled', 'downloaded', 'item-final'])
      expect(seen.kinds[kind], kind).toBeGreaterThan(0);
    expect(seen.kinds.accepted).toBe(6);
    expect(seen.kinds.downloaded).toBe(6);
    expect(seen.itemless).toEqual([]);
    // The estimate's credits are what the run was charged.
    expect(seen.charged).toBe(seen.estimate.credits);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(6);
    expectNoDoubleChargeAndVerifiedOutputs(t.sim, ws);
  });

  it('an abort is Ctrl-C: exit code 130, the state saved, and the same call later finishes without paying twice', async () => {
    const t = await startTestSim({ timeScale: TIME_SCALE });
    const ws = workspace(t.sim, imageManifest(12), {}, TIME_SCALE);
    const config = { manifest: 'm.yaml', cwd: ws.dir, baseUrl: t.sim.baseUrl, apiKey: t.sim.apiKey };
    const first = await consume({ ...config, timeScale: TIME_SCALE, abortAfterAccepted: 3 });
    expect(first.code).toBe(0);
    expect(first.stderr).toBe('');
    expect(first.seen.exitCode).toBe(130);
    expect(first.seen.stop).toBe('interrupted');
    expect(first.seen.done).toBeLessThan(12);
    const second = await consume({ ...config, timeScale: TIME_SCALE });
    expect(second.seen.exitCode).toBe(0);
    expect(second.seen.done).toBe(12);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(12);
    expectNoDoubleChargeAndVerifiedOutputs(t.sim, ws);
  }, 120_000);

  it('openRun() is one object: it says what it opened, runs once, stops with 130 at any time, and closes what it opened', async () => {
    const t = await startTestSim({ timeScale: TIME_SCALE });
    const ws = workspace(t.sim, imageManifest(12), {}, TIME_SCALE);
    const options = { cwd: ws.dir, baseUrl: t.sim.baseUrl, apiKey: t.sim.apiKey, timeScale: TIME_SCALE };
    let state: string;
    {
      await using opened = await openRun('m.yaml', options);
      state = opened.start.places.state;
      expect(opened.start).toMatchObject({ items: 12, resumed: false, simulated: false });
      expect(opened.start.keys.accepted).toHaveLength(1);
      // Open, and nothing sent yet.
      expect(existsSync(`${state}-wal`)).toBe(true);
      expect(t.sim.service.ledger.of('charge')).toHaveLength(0);
      const kinds: string[] = [];
      let accepted = 0;
      const reading = (async () => {
        for await (const event of opened.events()) {
          kinds.push(event.kind);
          if (event.kind === 'accepted' && ++accepted === 3) opened.stop();
        }
      })();
      const outcome = await opened.run();
      await reading;
      expect(outcome.exitCode).toBe(130);
      expect(opened.stopReason?.kind).toBe('interrupted');
      expect(kinds[0]).toBe('started');
      // Once: a second call is the same run's outcome, nothing sent again.
      expect(await opened.run()).toBe(outcome);
      const charged = opened.status().credits().charged;
      expect(charged).toBe(t.sim.service.ledger.of('charge').reduce((n, c) => n + c.credits, 0));
    }
    // Disposed: the state's last connection is closed (SQLite folds its WAL back and removes it).
    expect(existsSync(`${state}-wal`)).toBe(false);
    await using again = await openRun('m.yaml', options);
    expect(again.start.resumed).toBe(true);
    expect((await again.run()).exitCode).toBe(0);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(12);
    expectNoDoubleChargeAndVerifiedOutputs(t.sim, ws);
  }, 120_000);

  it("openRun()'s stop('drained') sends nothing new, finishes what is in flight and ends with exit 3 saying what it left", async () => {
    const t = await startTestSim({ timeScale: TIME_SCALE });
    const ws = workspace(t.sim, imageManifest(12), {}, TIME_SCALE);
    await using opened = await openRun('m.yaml', {
      cwd: ws.dir,
      baseUrl: t.sim.baseUrl,
      apiKey: t.sim.apiKey,
      timeScale: TIME_SCALE,
      maxImagesInFlight: 2,
    });
    opened.on((event) => {
      if (event.kind === 'accepted') opened.stop('drained');
    });
    const outcome = await opened.run();
    expect(outcome.exitCode).toBe(3);
    expect(outcome.stop?.kind).toBe('drained');
    expect(outcome.stop?.message).toMatch(/were not sent \(run the same command to send them\)/);
    // What was sent was finished and downloaded: every charge is a done item.
    expect(outcome.counts.done).toBe(t.sim.service.ledger.of('charge').length);
    expect(outcome.counts.done).toBeLessThan(12);
    expectNoDoubleChargeAndVerifiedOutputs(t.sim, ws);
  }, 60_000);

  it('a bad manifest: validate() lists each problem with its file, line and field; estimate() and run() reject with exit code 2, nothing sent', async () => {
    const t = await startTestSim({ timeScale: TIME_SCALE });
    const ws = workspace(t.sim, 'version: 1\nitems:\n  - { id: a, prompt: "x", model: studio-lite, seed: "many" }\n');
    const found = await validate('m.yaml', { cwd: ws.dir });
    expect(found.valid).toBe(false);
    expect(found.issues[0]).toMatchObject({ file: 'm.yaml', line: 3, field: expect.stringContaining('seed') });
    const options = { cwd: ws.dir, baseUrl: t.sim.baseUrl, apiKey: t.sim.apiKey };
    expect(await rejection(estimate('m.yaml', options))).toMatchObject({ exitCode: 2 });
    const handle = run('m.yaml', options);
    const events: string[] = [];
    for await (const event of handle.events) events.push(event.kind);
    const error = await rejection(handle.done);
    expect(error).toMatchObject({ exitCode: 2, name: 'ExitError' });
    expect(error.message).toContain('m.yaml:3');
    expect(events).toEqual([]);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(0);
  });

  it('an abort while the start waits for a service that answers nothing: exit code 130, nothing sent', async () => {
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((r) => closed.close(r));
    const dir = mkdtempSync(join(tmpdir(), 'genbatch-abort-'));
    writeFileSync(join(dir, 'm.yaml'), imageManifest(2));
    const controller = new AbortController();
    const handle = run('m.yaml', {
      cwd: dir,
      baseUrl: `http://127.0.0.1:${port}/v1`,
      apiKey: 'sk-test-0123456789abcdef',
      signal: controller.signal,
    });
    const kinds: string[] = [];
    for await (const event of handle.events) {
      kinds.push(event.kind);
      if (event.kind === 'service-unreachable') controller.abort();
    }
    expect(kinds).toEqual(['service-unreachable']);
    expect(await rejection(handle.done)).toMatchObject({ exitCode: 130 });
  });

  it('an option takes what its flag takes, and is refused with the same words', async () => {
    const handle = run('m.yaml', { submitRate: 'fast', cwd: tmpdir() });
    const error = await rejection(handle.done);
    expect(error.exitCode).toBe(2);
    expect(error.message).toMatch(/^submitRate: /);
  });

  it("docs/api.md's example runs as written: a rehearsal of the demo manifest, exit 0", async () => {
    const doc = readFileSync(join(ROOT, 'docs', 'api.md'), 'utf8');
    const example = /```js\n([\s\S]*?)```/.exec(doc)![1]!;
    writeFileSync(join(home, 'pipeline.mjs'), example);
    mkdirSync(join(home, 'manifests'), { recursive: true });
    copyFileSync(join(ROOT, 'manifests', 'demo.yaml'), join(home, 'manifests', 'demo.yaml'));
    const { stdout, stderr, code } = await program(['pipeline.mjs']);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(stdout).toMatch(/^8 items, \d+ credits, about \d+ s$/m);
    expect(stdout.match(/^hero-mug: /m)).not.toBeNull();
    expect(stdout).toMatch(/^exit 0: 8 done, \d+ credits charged$/m);
  });

  it('types: a TypeScript program compiles against the package by name (exports with types first)', async () => {
    writeFileSync(
      join(home, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          module: 'nodenext',
          moduleResolution: 'nodenext',
          target: 'es2022',
          strict: true,
          noEmit: true,
          skipLibCheck: true,
          types: ['node'],
          typeRoots: [join(ROOT, 'node_modules', '@types')],
        },
        files: ['consumer.ts'],
      }),
    );
    const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
    const compiled = await promisify(execFile)(process.execPath, [tsc, '-p', 'tsconfig.json'], { cwd: home }).then(
      () => ({ ok: true, out: '' }),
      (error: { stdout: string }) => ({ ok: false, out: error.stdout }),
    );
    expect(compiled.out).toBe('');
    expect(compiled.ok).toBe(true);
  });

  it('the package: publint finds nothing, and the tarball holds the library, its types, the bin and the pages, not the sources', async () => {
    const { messages } = await publint({ pkgDir: ROOT, strict: true, pack: 'npm' });
    expect(messages).toEqual([]);
    const { stdout } = await promisify(execFile)('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {
      cwd: ROOT,
      maxBuffer: 64 * 1024 * 1024,
    });
    const files = new Set((JSON.parse(stdout) as { files: { path: string }[] }[])[0]!.files.map((f) => f.path));
    for (const path of [
      'package.json',
      'README.md',
      'dist/library/index.js',
      'dist/library/index.d.ts',
      'dist/bin/genbatch.js',
    ])
      expect(files.has(path), path).toBe(true);
    expect([...files].some((f) => f.startsWith('dist/pages/'))).toBe(true);
    expect([...files].filter((f) => f.startsWith('src/') || f.startsWith('test/'))).toEqual([]);
  });
});
