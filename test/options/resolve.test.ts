import { describe, expect, it } from 'vitest';
import { RUN_FLAGS } from '../../src/options/flags.js';
import { parseProgramFlags, resolveRunOptions } from '../../src/options/resolve.js';
import { DEFAULT_KEY_LIMITS } from '../../src/scheduler/limits.js';

const place = { manifestPath: 'm.yaml', cwd: '/tmp', env: {} };

describe("a run's options, resolved once", () => {
  it('are frozen, and a run with no flags gets every default the flags declare', () => {
    const o = resolveRunOptions({}, place);
    expect(Object.isFrozen(o)).toBe(true);
    expect(Object.isFrozen(o.limits)).toBe(true);
    expect(() => {
      (o as { maxRetries: number }).maxRetries = 9;
    }).toThrow(TypeError);
    expect(o.pollWaitSeconds).toBe(RUN_FLAGS.pollWait.default);
    expect(o.maxRetries).toBe(RUN_FLAGS.maxRetries.default);
    expect(o.maxBlocked).toBe(RUN_FLAGS.maxBlocked.default);
    expect(o.idleTimeoutMs).toBe(RUN_FLAGS.idleTimeout.default * 1000);
    expect(o.unreachableMs).toBe(RUN_FLAGS.unreachableMinutes.default * 60_000);
    expect(o.stallMs).toBe(RUN_FLAGS.stallMinutes.default * 60_000);
    expect(o.maxOutputBytes).toBe(RUN_FLAGS.maxOutputMb.default * 1024 * 1024);
    expect(o.maxUnpublishedBytes).toBe(RUN_FLAGS.maxUnpublishedMb.default * 1024 * 1024);
    expect(o.limits.dailyCap).toBe(RUN_FLAGS.dailyCap.default);
    expect(o.limits.maxImagesInFlight).toBe(RUN_FLAGS.maxImagesInFlight.default);
    expect(o.limits.submit).toEqual(DEFAULT_KEY_LIMITS.submit);
    expect(o.clock.timeScale).toBe(1);
    expect(o.canary).toBeUndefined();
  });

  it('scale the default windows once, in the clock: a rehearsal is 60x unless told', () => {
    const o = resolveRunOptions({ simulate: true }, place);
    expect(o.simulate).toBe(true);
    expect(o.clock.timeScale).toBe(60);
    expect(o.limits.submit).toEqual({ count: 10, windowMs: 1_000 });
    expect(o.clock.serviceMs(o.limits.submit.windowMs)).toBe(60_000);
    // A rate given explicitly is taken as it is.
    expect(resolveRunOptions({ simulate: true, submitRate: { count: 5, windowMs: 700 } }, place).limits.submit).toEqual(
      {
        count: 5,
        windowMs: 700,
      },
    );
  });

  it("read a program's values with the flags' parsers, and refuse a bad one in the flag's words", () => {
    const flags = parseProgramFlags({ submitRate: '20/30s', canary: '1%', only: 'sku-1', maxRetries: 4 });
    const o = resolveRunOptions({ ...flags, canary: undefined }, place);
    expect(o.limits.submit).toEqual({ count: 20, windowMs: 30_000 });
    expect(o.only).toEqual(['sku-1']);
    expect(o.maxRetries).toBe(4);
    expect(flags.canary).toEqual({ percent: 1 });
    expect(() => parseProgramFlags({ pollWait: 31 })).toThrow(/pollWait: expected whole seconds from 1 to 30/);
    expect(() => resolveRunOptions({ notify: 'https://x', notifyCommand: 'cat' }, place)).toThrow(/give one of them/);
  });

  it('take the coordinator from the environment, and keep every secret the log must never hold', () => {
    const env = { GENBATCH_COORDINATOR: 'postgres://u:p@h/db', GENBATCH_API_KEY: 'sk_live_abc' };
    const o = resolveRunOptions({}, { ...place, env });
    expect(o.coordinatorUrl).toBe(env.GENBATCH_COORDINATOR);
    expect(o.secrets).toContain('sk_live_abc');
    expect(resolveRunOptions({ coordinator: 'postgres://other/db' }, { ...place, env }).coordinatorUrl).toBe(
      'postgres://other/db',
    );
  });
});
