import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { CLI, cleanEnv, runCli, runCliInProcess } from '../helpers/cli.js';

describe('CLI conventions', () => {
  it('--version prints the package version', async () => {
    const res = await runCli(['--version']);
    expect(res.code).toBe(0);
    expect(res.stdout.trim()).toBe((JSON.parse(readFileSync('package.json', 'utf8')) as { version: string }).version);
  });

  it('a usage error is one line and a pointer to --help, not the whole help', async () => {
    const res = await runCli(['run', 'm.yaml', '--bogus']);
    expect(res.code).toBe(2);
    expect(res.stderr.trim().split('\n')).toEqual(["error: unknown option '--bogus'", '(add --help for usage)']);
  });

  it('--api-key is refused with where the key goes, and the key is shown nowhere', async () => {
    const res = await runCli(['me', '--api-key', 'gb_live_do_not_print_me']);
    expect(res.code).toBe(2);
    expect(res.stderr).toMatch(/set GENBATCH_API_KEY in the environment/);
    expect(res.stdout + res.stderr).not.toContain('do_not_print_me');
    const inline = await runCli(['run', 'm.yaml', '--api-key=gb_live_do_not_print_me']);
    expect(inline.code).toBe(2);
    expect(inline.stdout + inline.stderr).not.toContain('do_not_print_me');
  });

  it('the help names the environment variables, gives examples and the exit codes', async () => {
    const res = await runCli(['--help']);
    expect(res.code).toBe(0);
    for (const needle of [
      'GENBATCH_API_KEY',
      'GENBATCH_BASE_URL',
      '--simulate',
      'Examples:',
      'Exit codes:',
      '130  interrupted',
    ])
      expect(res.stdout).toContain(needle);
  });

  it("a reader that closes the pipe early (--help | head) meets no stack trace, and the exit code is the command's", async () => {
    const child = spawn(process.execPath, [CLI, 'run', '--help'], {
      env: cleanEnv(),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let err = '';
    child.stderr!.on('data', (d) => (err += d));
    // The pipe closed before the help is written, as a reader that stopped early leaves it.
    child.stdout!.destroy();
    const [code] = await once(child, 'exit');
    expect(err).toBe('');
    expect(code).toBe(0);
  });

  it("every command's help ends with the environment it reads and what each exit code means", async () => {
    const commands = ['validate', 'estimate', 'run', 'status', 'pause', 'resume', 'drain', 'report', 'retry'];
    for (const command of [...commands, 'reconcile', 'models', 'me', 'review', 'metrics', 'simulate']) {
      const res = await runCliInProcess([command, '--help'], cleanEnv(), process.cwd());
      expect(res.code, command).toBe(0);
      expect(res.stdout, command).toMatch(/Environment:\n {2}GENBATCH_API_KEY /);
      expect(res.stdout, command).toMatch(/Exit codes:\n {4}0 {2}every item done[\s\S]* {2}130 {2}interrupted/);
    }
  });

  it("simulate --help gives each knob's default, as the simulator takes it when told nothing", async () => {
    const res = await runCliInProcess(['simulate', '--help'], cleanEnv(), process.cwd());
    const options = res.stdout.slice(res.stdout.indexOf('Options:'), res.stdout.indexOf('Environment:'));
    // One entry per flag: its first line starts with "  --"; its wrapped lines are indented further.
    const entries = options.split(/\n(?= {2}-)/).slice(1);
    const withoutDefault = entries.filter((e) => !e.includes('--help') && !/\(default\s[^)]+\)\s*$/.test(e));
    expect(withoutDefault).toEqual([]);
    expect(entries.length).toBeGreaterThan(25);
    const flat = options.replace(/\s+/g, ' ');
    for (const said of ['(default 100,000)', 'service seconds (default 10-90)', '(default 900)', '(default 1)'])
      expect(flat).toContain(said);
  });
});

describe('messages in words, not error codes', () => {
  it('a template typo is said once: the rows it is in, their count, what was meant; each line says whose it is', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'genbatch-typo-'));
    writeFileSync(
      join(dir, 'm.yaml'),
      'version: 1\nitems:\n  - rows: rows.csv\n    id: "{{sku}}"\n    model: studio-xl\n    prompt: "{{titel}}"\n    aspectRatio: wide\n',
    );
    writeFileSync(
      join(dir, 'rows.csv'),
      `sku,title\n${Array.from({ length: 5 }, (_, i) => `s${i},t${i}`).join('\n')}\n`,
    );
    const res = await runCli(['validate', 'm.yaml'], undefined, dir);
    expect(res.code).toBe(2);
    expect(res.stderr.trim().split('\n')).toEqual([
      'genbatch: m.yaml:6:5: items[0].prompt: unknown template name {{titel}}; did you mean {{title}}? known here: aspectRatio, id, model, sku, title, type (in 5 rows: rows.csv:2, 3, 4, 5, 6)',
      'genbatch: m.yaml:7:5: items[0].aspectRatio: expected <w>:<h> such as "4:5", found "wide" (in 5 rows: rows.csv:2, 3, 4, 5, 6)',
      'genbatch: 2 problems found; nothing was submitted.',
    ]);
    writeFileSync(join(dir, 'one.yaml'), 'version: 1\nitems:\n  - { id: a, model: studio-xl, prompt: p }\n');
    const one = await runCli(['validate', 'one.yaml'], undefined, dir);
    expect(one.stdout).toContain('one.yaml: valid: 1 item (1 image, 0 video)');
  });

  it('a manifest that is not there, or is a folder, is said so, with where it was looked for', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'genbatch-missing-'));
    const missing = await runCli(['validate', 'nope.yaml'], undefined, dir);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain(
      `nope.yaml:1:1: (file): cannot read the manifest: no such file (looked for ${join(dir, 'nope.yaml')})`,
    );
    expect(missing.stderr).not.toContain('ENOENT');
    const folder = await runCli(['validate', '.'], undefined, dir);
    expect(folder.stderr).toContain('cannot read the manifest: a folder, not a file');
  });
});

describe('--json on every command that prints a result', () => {
  it('validate, run, retry and report each print one JSON document on stdout, messages on stderr', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'genbatch-json-'));
    writeFileSync(
      join(dir, 'm.yaml'),
      'version: 1\ndefaults: { model: studio-lite }\nitems:\n  - { id: a, prompt: "a mug" }\n  - { id: b, prompt: "a cup" }\n',
    );
    const validate = await runCli(['validate', 'm.yaml', '--json'], undefined, dir);
    expect(validate.code).toBe(0);
    expect(JSON.parse(validate.stdout)).toMatchObject({
      manifest: 'm.yaml',
      valid: true,
      items: { total: 2, image: 2, video: 0 },
      issues: [],
    });

    const run = await runCli(['run', 'm.yaml', '--simulate', '--json'], undefined, dir);
    expect(run.code, run.stderr).toBe(0);
    const result = JSON.parse(run.stdout);
    expect(result).toMatchObject({
      manifest: 'm.yaml',
      rehearsal: true,
      counts: { done: 2 },
      credits: { charged: 4, refunded: 0 },
      removed: 0,
    });
    expect(readFileSync(result.results.jsonl, 'utf8').trim().split('\n')).toHaveLength(2);
    expect(run.stderr).toMatch(/rehearsal on the embedded simulator/);

    const retry = await runCli(['retry', 'm.yaml', '--simulate', '--json'], undefined, dir);
    expect(retry.code).toBe(0);
    expect(JSON.parse(retry.stdout)).toMatchObject({ requeued: 0, blocked: 0, conflicts: [] });

    const report = await runCli(['report', 'm.yaml', '--simulate', '--json'], undefined, dir);
    expect(report.code).toBe(0);
    expect(JSON.parse(report.stdout)).toMatchObject({ items: 2, jsonl: result.results.jsonl, html: null });
  });

  it('an invalid manifest under validate --json: exit 2, every issue as JSON on stdout, one line on stderr', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'genbatch-json-'));
    writeFileSync(
      join(dir, 'm.yaml'),
      'version: 1\nitems:\n  - { id: a, model: studio-lite, prompt: "{{nope}}" }\n  - { id: b, model: studio-lite, prompt: "x", aspectRatio: wide }\n',
    );
    const res = await runCli(['validate', 'm.yaml', '--json'], undefined, dir);
    expect(res.code).toBe(2);
    const doc = JSON.parse(res.stdout);
    expect(doc.valid).toBe(false);
    expect(doc.issues.map((i: { line: number; field: string }) => `${i.line}:${i.field}`)).toEqual([
      '3:items[0].prompt',
      '4:items[1].aspectRatio',
    ]);
    expect(res.stderr.trim()).toBe('genbatch: 2 problems found; nothing was submitted.');
  });
});

describe('colour', () => {
  const ESC = '\x1b[';
  /** The environment with only the colour variables given here. */
  const envWith = (extra: Record<string, string> = {}) => {
    const env = cleanEnv(extra);
    for (const name of ['NO_COLOR', 'FORCE_COLOR']) if (!(name in extra)) delete env[name];
    return env;
  };
  it('marks failures on a terminal (FORCE_COLOR stands in for one here), never with NO_COLOR or --no-color, never on a plain pipe', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'genbatch-colour-'));
    writeFileSync(
      join(dir, 'm.yaml'),
      'version: 1\ndefaults: { model: studio-lite }\nitems:\n  - { id: good, prompt: "a mug" }\n  - { id: doomed, prompt: "a cup [sim:fail]" }\n',
    );
    const piped = await runCli(['run', 'm.yaml', '--simulate', '--max-retries', '0'], envWith(), dir);
    expect(piped.code).toBe(1);
    expect(piped.stdout + piped.stderr).not.toContain(ESC);
    const forced = await runCli(
      ['run', 'm.yaml', '--simulate', '--max-retries', '0'],
      envWith({ FORCE_COLOR: '1' }),
      dir,
    );
    expect(forced.stdout).toContain(`${ESC}31m, failed 1, rejected 0, blocked 0, skipped 0${ESC}39m`);
    expect(forced.stdout).toContain(`${ESC}31mGENERATION_FAILED${ESC}39m`);
    const status = await runCli(['status', 'm.yaml', '--simulate'], envWith({ FORCE_COLOR: '1' }), dir);
    expect(status.stdout).toMatch(/\x1b\[31mdoomed\s+failed\s+GENERATION_FAILED/);
    const offs: { env: Record<string, string>; args: string[] }[] = [
      { env: { FORCE_COLOR: '1', NO_COLOR: '1' }, args: [] },
      { env: { FORCE_COLOR: '1' }, args: ['--no-color'] },
    ];
    for (const off of offs) {
      const res = await runCli(['status', 'm.yaml', '--simulate', ...off.args], envWith(off.env), dir);
      expect(res.code, res.stderr).toBe(0);
      expect(res.stdout + res.stderr).not.toContain(ESC);
    }
    // Both set, on a run that loads all it loads: NO_COLOR wins, and Node (23 and later) is left nothing to warn
    // about (the suite fails on any warning a CLI prints; CI runs it on Node 24 too).
    const both = await runCli(
      ['run', 'm.yaml', '--simulate', '--max-retries', '0'],
      envWith({ FORCE_COLOR: '1', NO_COLOR: '1' }),
      dir,
    );
    expect(both.code).toBe(1);
    expect(both.stdout + both.stderr).not.toContain(ESC);
  });
});
