import { createHash } from 'node:crypto';
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCliInProcess } from '../helpers/cli.js';
import { imageManifest, readState, workspace } from '../helpers/run.js';
import { startTestSim } from '../helpers/sim.js';

const sha = (path: string) => createHash('sha256').update(readFileSync(path)).digest('hex');
const posts = (t: Awaited<ReturnType<typeof startTestSim>>) =>
  t.sim.service.ledger.of('request').filter((r) => r.method === 'POST').length;

/** Every file of a dir (recursively) with its sha256. */
function snapshot(dir: string): Record<string, string> {
  return Object.fromEntries(
    readdirSync(dir, { recursive: true, withFileTypes: true })
      .filter((e) => e.isFile())
      .map((e) => [join(e.parentPath, e.name).slice(dir.length + 1), sha(join(e.parentPath, e.name))]),
  );
}

describe('a rehearsal never touches a real run', () => {
  it('a --simulate run of a manifest that ran for real leaves its outputs, results and state as they were; a real rerun submits nothing', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(t.sim, imageManifest(4));
    const real = await ws.run();
    expect(real.code, real.stdout).toBe(0);
    const outputs = snapshot(ws.outDir);
    expect(Object.keys(outputs)).toEqual(expect.arrayContaining(['item-0-1.png', 'results.jsonl', 'index.html']));
    const state = readState(ws.statePath);
    const stateBytes = sha(ws.statePath);

    const rehearsal = await runCliInProcess(['run', 'm.yaml', '--simulate', '--time-scale', '600'], ws.env, ws.dir);
    expect(rehearsal.code, rehearsal.stdout + rehearsal.stderr).toBe(0);
    expect(rehearsal.stderr).toMatch(
      /rehearsal .* starts over each time; outputs go to .*out\/m\.rehearsal, the state to .*m\.rehearsal\.sqlite/,
    );
    expect(existsSync(join(ws.dir, 'out', 'm.rehearsal', 'item-0-1.png'))).toBe(true);
    expect(snapshot(ws.outDir)).toEqual(outputs);
    expect(sha(ws.statePath)).toBe(stateBytes);
    expect(readState(ws.statePath)).toEqual(state);

    // Pointed at the real state, a rehearsal refuses it.
    const pointed = await runCliInProcess(
      ['run', 'm.yaml', '--simulate', '--time-scale', '600', '--state', ws.statePath],
      ws.env,
      ws.dir,
    );
    expect(pointed.code).toBe(2);
    expect(pointed.stderr).toMatch(
      /is the state of a real run or a trial; a rehearsal \(--simulate\) never touches it/,
    );
    expect(sha(ws.statePath)).toBe(stateBytes);

    const before = posts(t);
    const again = await ws.run();
    expect(again.code, again.stdout).toBe(0);
    expect(posts(t)).toBe(before);
    // The results are written again, and the owner marker with this run's lease: the outputs are as they were.
    expect(snapshot(ws.outDir)).toEqual({
      ...outputs,
      ...pick(snapshot(ws.outDir), ['results.jsonl', 'results.csv', 'index.html', '.genbatch-outputs.json']),
    });
    const marker = JSON.parse(readFileSync(join(ws.outDir, '.genbatch-outputs.json'), 'utf8'));
    expect(marker).toMatchObject({ state: ws.statePath, rehearsal: false, holder: { until: 0 } });
  });

  it('status, retry and report look at the rehearsal only with --simulate, and say where the other state is', async () => {
    const ws = workspace(
      { baseUrl: 'http://127.0.0.1:1/v1', apiKey: 'unused' } as never,
      imageManifest(2, (i) => (i === 0 ? 'doomed [sim:fail]' : 'fine')),
    );
    const rehearsal = await runCliInProcess(
      ['run', 'm.yaml', '--simulate', '--time-scale', '600', '--max-retries', '0'],
      ws.env,
      ws.dir,
    );
    expect(rehearsal.code).toBe(1);
    expect(rehearsal.stdout).not.toMatch(/resume/);
    // Its hints name its own state: the status it points to is the rehearsal's.
    expect(rehearsal.stdout).toContain(
      'a rehearsal starts over each time: run it again (with --simulate) to try the 1 failed or skipped item afresh; genbatch status m.yaml --simulate lists them',
    );
    expect(rehearsal.stdout).not.toMatch(/genbatch retry m\.yaml/);
    const paused = await runCliInProcess(['pause', 'm.yaml', '--simulate'], ws.env, ws.dir);
    expect(paused.stdout).toContain('(genbatch resume m.yaml --simulate goes on)');
    expect((await runCliInProcess(['resume', 'm.yaml', '--simulate'], ws.env, ws.dir)).code).toBe(0);
    // Without --simulate: the real run's status, which is nothing yet, and where the rehearsal's is.
    const status = await runCliInProcess(['status', 'm.yaml'], ws.env, ws.dir);
    expect(status.code).toBe(0);
    expect(status.stdout).toMatch(
      /nothing has run here yet \(a rehearsal's state is at .*m\.rehearsal\.sqlite: add --simulate/,
    );
    const real = await runCliInProcess(['status', 'm.yaml', '--json'], ws.env, ws.dir);
    expect(JSON.parse(real.stdout)).toMatchObject({ items: { total: 0 }, run: { sessions: 0 } });
    const simulated = await runCliInProcess(['status', 'm.yaml', '--json', '--simulate'], ws.env, ws.dir);
    expect(JSON.parse(simulated.stdout)).toMatchObject({ items: { total: 2, done: 1, failed: 1 } });
    const retry = await runCliInProcess(['retry', 'm.yaml', '--simulate'], ws.env, ws.dir);
    expect(retry.stdout).toMatch(/^1 item put back/);
    const report = await runCliInProcess(['report', 'm.yaml', '--simulate'], ws.env, ws.dir);
    expect(report.code, report.stderr).toBe(0);
    expect(report.stdout).toContain(join('out', 'm.rehearsal', 'results.jsonl'));
  });

  it("an output dir that holds another state's outputs is refused before anything is sent", async () => {
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(t.sim, imageManifest(2));
    expect((await ws.run(['--out', 'shared'])).code).toBe(0);
    const outputs = snapshot(join(ws.dir, 'shared'));
    writeFileSync(join(ws.dir, 'other.yaml'), imageManifest(2));
    const before = posts(t);
    const other = await runCliInProcess(
      ['run', 'other.yaml', '--time-scale', '600', '--out', 'shared'],
      ws.env,
      ws.dir,
    );
    expect(other.code).toBe(2);
    expect(other.stderr).toMatch(
      /shared holds the outputs of the run whose state is .*m\.sqlite \(manifest .*m\.yaml\); this run .*would overwrite them, so nothing was submitted\. Pass another --out/,
    );
    expect(posts(t)).toBe(before);
    expect(snapshot(join(ws.dir, 'shared'))).toEqual(outputs);
    // Another state file of the same manifest, while the first still exists: refused too.
    const second = await runCliInProcess(
      ['run', 'm.yaml', '--time-scale', '600', '--out', 'shared', '--state', 'second.sqlite'],
      ws.env,
      ws.dir,
    );
    expect(second.code).toBe(2);
    expect(posts(t)).toBe(before);
  });
});

describe('a state keyed by a name two manifest files share', () => {
  it('is said, naming the other file, when a copy of a manifest goes on with its state', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(t.sim, imageManifest(2));
    expect((await ws.run()).code).toBe(0);
    // A copy with another budget, the same name: the state is keyed by the name.
    writeFileSync(join(ws.dir, 'copy.yaml'), `name: m\n${imageManifest(2)}`);
    const copy = await runCliInProcess(['run', 'copy.yaml', '--time-scale', '600'], ws.env, ws.dir);
    expect(copy.code, copy.stderr).toBe(0);
    expect(copy.stderr).toContain(
      `the state ${ws.statePath} is the run of ${join(ws.dir, 'm.yaml')}, another manifest file named m: this run goes on with it`,
    );
    // The manifest itself says nothing of the sort.
    expect((await ws.run()).stderr).not.toContain('another manifest file');
  });
});

function pick(o: Record<string, string>, keys: string[]): Record<string, string> {
  return Object.fromEntries(keys.filter((k) => k in o).map((k) => [k, o[k]!]));
}
