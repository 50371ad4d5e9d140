import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { keyFingerprint } from '../../src/api/key-pool.js';
import { startCli, runCliInProcess } from '../helpers/cli.js';
import { expectKeyNowhere, imageManifest, readState, workspace } from '../helpers/run.js';
import { startTestSim } from '../helpers/sim.js';

describe('an attempt belongs to the key it was sent with', () => {
  it('a resume with another key leaves the first key’s jobs waiting, names that key by fingerprint, and pays for nothing twice; the first key then finishes them', async () => {
    // Jobs run 2–3 s, so the first run is killed while some are paid for and running.
    const t = await startTestSim({
      timeScale: 600,
      keys: [{ label: 'a' }, { label: 'b' }],
      imageSeconds: [1200, 1800],
    });
    const [keyA, keyB] = [t.sim.keys.a!, t.sim.keys.b!];
    const ws = workspace(t.sim, imageManifest(6));
    const envA = { ...ws.env, GENBATCH_API_KEY: keyA };
    const envB = { ...ws.env, GENBATCH_API_KEY: keyB };

    const first = startCli(ws.args(), envA, ws.dir);
    await expect
      .poll(() => t.sim.service.ledger.of('charge').length, { timeout: 20_000, interval: 20 })
      .toBeGreaterThanOrEqual(2);
    first.child.kill('SIGKILL');
    await once(first.child, 'close');
    const paidWithA = t.sim.service.ledger.of('charge').filter((c) => c.key === 'a').length;

    const second = await runCliInProcess(ws.args(), envB, ws.dir);
    expect(second.code).not.toBe(0);
    // Held: every item whose request had left with key a, paid for or not yet answered.
    const held = readState(ws.statePath).items.filter((i) => i.error_code === 'KEY_MISSING').length;
    expect(held).toBeGreaterThanOrEqual(paidWithA);
    expect(second.stdout).toContain(
      `${held} item${held === 1 ? ' was' : 's were'} sent with the API key whose fingerprint is ${keyFingerprint(keyA)}`,
    );
    // Key b charged only for items never sent with a, and never asked for a's jobs.
    expect(t.sim.service.ledger.of('charge').filter((c) => c.key === 'b')).toHaveLength(6 - held);
    const bReadA = t.sim.service.ledger.of('request').filter((r) => r.key === 'b' && r.status === 404);
    expect(bReadA).toEqual([]);

    const third = await runCliInProcess(ws.args(), envA, ws.dir);
    expect(third.code).toBe(0);
    expect(readState(ws.statePath).items.every((i) => i.state === 'done')).toBe(true);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(6);
    for (const key of [keyA, keyB]) expectKeyNowhere(ws.dir, key);
    expect(readFileSync(ws.statePath).includes(Buffer.from(keyFingerprint(keyA)))).toBe(true);
  });

  it('GENBATCH_API_KEYS with several keys: me shows each by fingerprint, naming none', async () => {
    const t = await startTestSim({
      keys: [
        { label: 'a', dailyCap: 500 },
        { label: 'b', dailyCap: 300 },
      ],
    });
    const ws = workspace(t.sim, imageManifest(1));
    const env = { ...ws.env, GENBATCH_API_KEY: '', GENBATCH_API_KEYS: `${t.sim.keys.a},\n${t.sim.keys.b}` };
    const me = await runCliInProcess(['me', '--json'], env, ws.dir);
    expect(me.code).toBe(0);
    const each = JSON.parse(me.stdout) as { fingerprint: string; limits: { dailyCredits: number } }[];
    expect(each.map((k) => [k.fingerprint, k.limits.dailyCredits])).toEqual([
      [keyFingerprint(t.sim.keys.a!), 500],
      [keyFingerprint(t.sim.keys.b!), 300],
    ]);
    for (const key of [t.sim.keys.a!, t.sim.keys.b!]) expect(`${me.stdout}${me.stderr}`).not.toContain(key);
  });
});
