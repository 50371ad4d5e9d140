import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';

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
    for (const needle of ['GENBATCH_API_KEY', 'GENBATCH_BASE_URL', '--simulate', 'Examples:', 'Exit codes:', '130 interrupted']) expect(res.stdout).toContain(needle);
  });
});
