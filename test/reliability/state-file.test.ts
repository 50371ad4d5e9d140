import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openSqlite } from '../../src/store/driver.js';
import { describe, expect, it } from 'vitest';
import { APPLICATION_ID, SCHEMA_VERSION } from '../../src/store/migrations/index.js';
import { imageManifest, readState, workspace } from '../helpers/run.js';
import { startTestSim } from '../helpers/sim.js';
import { runCliInProcess } from '../helpers/cli.js';

async function setup() {
  const t = await startTestSim({ timeScale: 600 });
  const ws = workspace(t.sim, imageManifest(2));
  mkdirSync(join(ws.dir, '.genbatch'), { recursive: true });
  return { t, ws };
}

describe('the state file', () => {
  it('a corrupt file: a clear message, nothing sent, the file untouched', async () => {
    const { t, ws } = await setup();
    writeFileSync(ws.statePath, 'this is not a database, but it is someone’s file\n'.repeat(200));
    const before = readFileSync(ws.statePath);
    const res = await ws.run();
    expect(res.code).toBe(4); // the environment: fix it and run again
    expect(res.stderr).toMatch(/cannot (open|use) the state file .*m\.sqlite/);
    expect(readFileSync(ws.statePath).equals(before)).toBe(true);
    expect(t.sim.service.ledger.of('request').filter((r) => r.method === 'POST')).toHaveLength(0);
  });

  it('a foreign SQLite database is refused, not migrated', async () => {
    const { t, ws } = await setup();
    const db = openSqlite(ws.statePath);
    db.exec('CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL); INSERT INTO invoices (total) VALUES (9.5);');
    db.close();
    const res = await ws.run();
    expect(res.code).toBe(4); // the environment: fix it and run again
    expect(res.stderr).toMatch(/is not a genbatch state file/);
    const after = openSqlite(ws.statePath, { readonly: true });
    expect(after.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all()).toEqual([{ name: 'invoices' }]);
    after.close();
    expect(t.sim.service.ledger.of('charge')).toHaveLength(0);
  });

  it('a state file from a newer schema is refused with what to do', async () => {
    const { ws } = await setup();
    expect((await ws.run()).code).toBe(0);
    const db = openSqlite(ws.statePath);
    db.pragma('user_version = 99');
    db.close();
    const res = await ws.run();
    expect(res.code).toBe(4); // the environment: fix it and run again
    expect(res.stderr).toContain(
      `written by a newer genbatch (state schema 99; this one knows ${SCHEMA_VERSION}). Upgrade genbatch`,
    );
    const check = openSqlite(ws.statePath, { readonly: true });
    expect(check.pragma('application_id', { simple: true })).toBe(APPLICATION_ID);
    expect((check.prepare("SELECT count(*) AS n FROM items WHERE state = 'done'").get() as { n: number }).n).toBe(2);
    check.close();
  });

  it('a state path that cannot be created is a clear error before anything is sent', async () => {
    const { t, ws } = await setup();
    writeFileSync(join(ws.dir, 'blocker'), 'a file where a directory should be');
    const res = await ws.run(['--state', 'blocker/state.sqlite']);
    expect(res.code).toBe(4); // the environment: fix it and run again
    expect(res.stderr).toMatch(/cannot create the state directory .*blocker/);
    expect(t.sim.service.ledger.of('request').filter((r) => r.method === 'POST')).toHaveLength(0);
  });
});

describe('a read-only state directory', () => {
  it('ends with a clear message and no state lost', async () => {
    const { chmodSync } = await import('node:fs');
    const { spawn } = await import('node:child_process');
    const { CLI } = await import('../helpers/cli.js');
    const { t, ws } = await setup();
    expect((await ws.run()).code).toBe(0);
    const before = readFileSync(ws.statePath);
    chmodSync(ws.dir, 0o755);
    chmodSync(join(ws.dir, '.genbatch'), 0o555);
    for (const f of ['m.sqlite', 'm.log']) chmodSync(join(ws.dir, '.genbatch', f), 0o444);
    // Root writes through any mode: run the CLI as an unprivileged user there.
    const asUser = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : {};
    const { spawnSync } = await import('node:child_process');
    const canLoad =
      spawnSync(process.execPath, ['-e', 'require("fs").accessSync(process.argv[1])', CLI], asUser).status === 0;
    expect(
      canLoad,
      `the unprivileged user (uid 65534) must be able to read ${CLI} for this test; make the checkout's parent directories traversable`,
    ).toBe(true);
    const child = spawn(process.execPath, [CLI, ...ws.args()], {
      cwd: ws.dir,
      env: ws.env,
      stdio: ['ignore', 'pipe', 'pipe'],
      ...asUser,
    });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    const code = await new Promise((r) => child.on('close', r));
    chmodSync(join(ws.dir, '.genbatch'), 0o755);
    expect(code).toBe(4);
    expect(stderr).toMatch(/cannot (lock|open|use) the state file .*(writable|readonly|EACCES)/i);
    expect(readFileSync(ws.statePath).equals(before)).toBe(true);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(2);
  });
});

describe("reading a live run's state", () => {
  it('status changes nothing in the state file or its WAL while a run holds it', async () => {
    // Hour-long jobs (a minute here): the run stays live, with its WAL holding what it wrote.
    const t = await startTestSim({ timeScale: 60, imageSeconds: [3600, 3600] });
    const ws = workspace(t.sim, imageManifest(2), {}, 60);
    const run = ws.start();
    await new Promise<void>((resolve) => {
      const unwatch = t.sim.service.ledger.watch((e) => {
        if (e.kind === 'charge' && t.sim.service.ledger.of('charge').length === 2) resolve(void unwatch());
      });
    });
    // Both charges are in the state (each is recorded before its event).
    await run.waitFor(/started/);
    for (;;) {
      if (readState(ws.statePath).attempts.filter((a) => a.job_id).length === 2) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    // Frozen, so only status could change the files now.
    run.child.kill('SIGSTOP');
    const files = ['m.sqlite', 'm.sqlite-wal'].map((f) => join(ws.dir, '.genbatch', f));
    const digest = () =>
      files.map((f) => (existsSync(f) ? createHash('sha256').update(readFileSync(f)).digest('hex') : 'absent'));
    const before = digest();
    expect(before[1]).not.toBe('absent');
    const status = await runCliInProcess(['status', 'm.yaml', '--json'], ws.env, ws.dir);
    expect(status.code, status.stderr).toBe(0);
    expect(JSON.parse(status.stdout).run.running).toBe(true);
    expect(digest()).toEqual(before);
    run.child.kill('SIGCONT');
    run.child.kill('SIGINT');
    await once(run.child, 'exit');
  });
});
