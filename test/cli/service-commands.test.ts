import { randomUUID } from 'node:crypto';
import { execFile } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { outage } from '../../src/options/parse.js';
import { simulatorOptions } from '../../src/cli/commands/simulate.js';
import { describe, expect, it } from 'vitest';
import { ApiClient } from '../../src/api/index.js';
import { cleanEnv, runCli, startCli, runCliInProcess } from '../helpers/cli.js';
import { startTestSim } from '../helpers/sim.js';

describe('genbatch simulate', () => {
  it('prints a base URL and a key that work, and stops on SIGINT', async () => {
    const cli = startCli(['simulate', '--port', '0', '--time-scale', '60']);
    const [, baseUrl] = await cli.waitFor(/base URL: (\S+)/);
    const [, apiKey] = await cli.waitFor(/API key:\s+(\S+)/);
    expect(baseUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1$/);
    // A time-scaled simulator says that a run against it paces to its time unasked.
    await cli.waitFor(/genbatch run <manifest> {4}\(paces to this simulator's time, x60, which its \/me says/);
    const client = new ApiClient({ baseUrl: baseUrl!, apiKey: apiKey! });
    expect((await client.me()).scopes).toEqual(['image', 'video']);
    await client.close();
    cli.child.kill('SIGINT');
    const [code] = await once(cli.child, 'exit');
    expect(code).toBe(0);
  });

  it('takes the key the environment holds, so one export serves both sides, and never prints it', async () => {
    const key = 'gbk_mine-and-maybe-real-0123456789';
    const cli = startCli(['simulate', '--port', '0'], cleanEnv({ GENBATCH_API_KEY: key }));
    const [, baseUrl] = await cli.waitFor(/base URL: (\S+)/);
    await cli.waitFor(/Ctrl-C stops it/);
    expect(cli.output()).toContain("API key: the environment's (GENBATCH_API_KEY)");
    expect(cli.output()).not.toContain(key);
    const client = new ApiClient({ baseUrl: baseUrl!, apiKey: key });
    expect((await client.me()).scopes).toEqual(['image', 'video']);
    await client.close();
    cli.child.kill('SIGINT');
    await once(cli.child, 'exit');
    // --keys must agree with the keys the environment holds.
    const res = await runCli(['simulate', '--port', '0', '--keys', '2'], cleanEnv({ GENBATCH_API_KEY: key }));
    expect(res.code).toBe(2);
    expect(res.stderr).toMatch(/--keys 2, and the environment holds 1 key/);
    expect(res.stderr).not.toContain(key);
  });

  it('refuses a non-loopback host', async () => {
    const res = await runCli(['simulate', '--host', '0.0.0.0']);
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/loopback/);
  });
});

describe('the installed command', () => {
  it('node_modules/.bin/genbatch runs the built CLI, so npx genbatch works in a clone', async () => {
    const bin = fileURLToPath(new URL('../../node_modules/.bin/genbatch', import.meta.url));
    const { stdout } = await promisify(execFile)(bin, ['--help'], { env: cleanEnv() });
    expect(stdout).toMatch(/simulate/);
  });
});

describe('genbatch models and me', () => {
  it('models --simulate lists the catalog', async () => {
    const res = await runCli(['models', '--simulate']);
    expect(res.code).toBe(0);
    expect(res.stdout).toMatch(/studio-xl\s+image\s+generate\s+8/);
    // A video model's credits: the range over its resolutions and durations, from the catalog's prices.
    expect(res.stdout).toMatch(/motion-2\s+video\s+image-to-video\s+100–360\s+5,10/);
  });

  it("me shows today's usage and when the daily cap resets", async () => {
    const t = await startTestSim({ credits: 123_456 });
    const env = cleanEnv({ GENBATCH_BASE_URL: t.sim.baseUrl, GENBATCH_API_KEY: t.sim.apiKey });
    await t.client.submitImage({ prompt: 'a mug', model: 'studio-xl' }, randomUUID());
    const res = await runCliInProcess(['me'], env);
    expect(res.code).toBe(0);
    const [header, row] = res.stdout.split('\n');
    expect(header).toMatch(/credits\s+subscription credits\s+scopes\s+daily cap\s+used today\s+resets/);
    expect(row).toMatch(/^123,448\s+.*image,video\s+20,000\s+8\s+\d{1,2} [A-Z][a-z]{2}, \d\d:\d\d \S+$/);
  });

  it('says how to set the base URL and the key when they are missing', async () => {
    const noUrl = await runCliInProcess(['me']);
    expect(noUrl.code).toBe(2);
    expect(noUrl.stderr).toContain('GENBATCH_BASE_URL');
    const noKey = await runCliInProcess(['me', '--base-url', 'http://127.0.0.1:9/v1']);
    expect(noKey.code).toBe(2);
    expect(noKey.stderr).toContain('GENBATCH_API_KEY');
  });

  it('a rejected key stops with exit 3, what to do, and never the key', async () => {
    const t = await startTestSim();
    const key = 'gbk_RevokedButStillSecret0000000';
    const res = await runCliInProcess(['me'], cleanEnv({ GENBATCH_BASE_URL: t.sim.baseUrl, GENBATCH_API_KEY: key }));
    expect(res.code).toBe(3);
    expect(res.stderr).toContain('UNAUTHENTICATED');
    expect(res.stderr).toContain('GENBATCH_API_KEY');
    expect(res.stdout + res.stderr).not.toContain(key);
  });

  it('me reads the key from the environment', async () => {
    const t = await startTestSim({ credits: 1234 });
    const res = await runCliInProcess(
      ['me', '--json'],
      cleanEnv({ GENBATCH_BASE_URL: t.sim.baseUrl, GENBATCH_API_KEY: t.sim.apiKey }),
    );
    expect(res.code).toBe(0);
    expect(JSON.parse(res.stdout)).toMatchObject({ credits: 1234, scopes: ['image', 'video'] });
  });

  it('a bad flag is a usage error', async () => {
    const res = await runCliInProcess(['models', '--type', 'audio', '--simulate']);
    expect(res.code).toBe(2);
    expect(res.stderr).toMatch(/expected image or video/);
  });
});

describe('simulate --outage', () => {
  it('takes CHARGE:SECONDS[:MODE], repeatable, into the simulator options; refuses anything else with what it expects', () => {
    const outages = outage('10:20', outage('3:1.5:reset'));
    expect(simulatorOptions({ outage: outages }).outages).toEqual([
      { atCharge: 3, seconds: 1.5, mode: 'reset' },
      { atCharge: 10, seconds: 20, mode: 'refuse' },
    ]);
    for (const bad of ['10', '0:5', '3:-1', '3:2:later', '3:2:reset:x'])
      expect(() => outage(bad)).toThrow(/CHARGE:SECONDS\[:refuse\|reset\|hang\|blackhole\]/);
  });
});
