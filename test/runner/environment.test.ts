import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { exitCodeWithin, runCliInProcess, startCli } from '../helpers/cli.js';
import { expectNoDoubleChargeAndVerifiedOutputs, imageManifest, readState, workspace } from '../helpers/run.js';
import { startTestSim } from '../helpers/sim.js';

const posts = (t: Awaited<ReturnType<typeof startTestSim>>) =>
  t.sim.service.ledger.of('request').filter((r) => r.method === 'POST');

describe('exit 4: the environment, found before paying where it can be', () => {
  it('an output dir that cannot be written stops the run before the first submission', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(t.sim, imageManifest(5));
    writeFileSync(join(ws.dir, 'not-a-dir'), 'a file where the output dir should be');
    const res = await ws.run(['--out', 'not-a-dir/out']);
    expect(res.code, res.stdout + res.stderr).toBe(4);
    expect(res.stdout).toMatch(/cannot write to the output dir .*not-a-dir\/out \(ENOTDIR\)\. Nothing was submitted/);
    expect(posts(t)).toEqual([]);
    // Fixed, the same command runs it.
    const again = await ws.run();
    expect(again.code, again.stdout).toBe(0);
    expectNoDoubleChargeAndVerifiedOutputs(t.sim, ws);
  });

  it('an output dir that cannot be made (procfs) is refused at once, exit 4, not a folder made for good', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(t.sim, imageManifest(2));
    // In a process of its own: Node's recursive mkdir looped on procfs for good, holding a thread of its pool.
    const cli = startCli(ws.args(['--out', '/proc/genbatch-out']), ws.env, ws.dir);
    expect(await exitCodeWithin(cli, 10_000), cli.output()).toBe(4);
    expect(cli.output()).toMatch(
      /cannot write to the output dir \/proc\/genbatch-out \(ENOENT\)\. Nothing was submitted/,
    );
    expect(posts(t)).toEqual([]);
  });

  it('downloads that keep failing the same way stop new submissions; jobs in flight are still polled; a rerun downloads without paying again', async () => {
    const t = await startTestSim({ timeScale: 600 });
    t.sim.storage.inject = () => 'forbidden';
    const ws = workspace(t.sim, imageManifest(12));
    const res = await ws.run(['--max-images-in-flight', '2']);
    expect(res.code, res.stdout).toBe(4);
    expect(res.stdout).toMatch(/3 downloads in a row failed the same way .*without paying again/);
    const charged = t.sim.service.ledger.of('charge').length;
    expect(charged).toBeLessThan(12);
    const states = readState(ws.statePath).items.map((i) => i.state);
    expect(states.filter((s) => s !== 'pending').every((s) => s === 'downloading')).toBe(true);

    t.sim.storage.inject = undefined;
    const again = await ws.run(['--max-images-in-flight', '2']);
    expect(again.code, again.stdout).toBe(0);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(12);
    expectNoDoubleChargeAndVerifiedOutputs(t.sim, ws);
  });

  it('a base URL where nothing ever answered is exit 4 within seconds, in one line naming it: not a 30-minute wait', {
    timeout: 30_000,
  }, async () => {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}/v1`;
    const ws = workspace({ baseUrl: base, apiKey: 'gb_test_unreachable' } as never, imageManifest(1));
    const res = await ws.run();
    expect(res.code, res.stderr).toBe(4);
    // Not --unreachable-minutes' 30: it has never been the service.
    expect(res.stderr).toMatch(/waiting for it, up to 9 s/);
    const said = res.stderr.split('\n').filter((l) => l.startsWith('genbatch:'));
    expect(said).toEqual([
      `genbatch: ${base} does not answer like the service (no answer: ECONNREFUSED): is the base URL right?`,
    ]);
  });

  it.each([
    ['another web server (404, HTML)', 'http', 'HTTP 404, text/html'],
    ['https:// against a plain-HTTP server', 'https', 'TLS: wrong version number; a plain-HTTP server? try http://'],
  ])('a base URL that reaches %s is exit 4 at once, in one line', async (_what, scheme, what) => {
    const server = createHttpServer((_req, res) => {
      res.writeHead(404, { 'content-type': 'text/html; charset=utf-8' });
      res.end('<html>\n<body><h1>Not Found</h1>\n<hr>nginx</body>\n</html>\n');
    }).listen(0, '127.0.0.1');
    await once(server, 'listening');
    try {
      const base = `${scheme}://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
      const ws = workspace({ baseUrl: base, apiKey: 'gb_test_elsewhere' } as never, imageManifest(1));
      for (const args of [['run', 'm.yaml'], ['validate', 'm.yaml', '--online'], ['me']]) {
        const res = await runCliInProcess(args, ws.env, ws.dir);
        expect(res.code, res.stderr).toBe(4);
        expect(res.stderr).toBe(
          `genbatch: ${base} does not answer like the service (${what}): is the base URL right?\n`,
        );
      }
    } finally {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    }
  });

  it('a service that is not there yet at the start is waited for: the run starts once it answers', async () => {
    const port = await freePort();
    const key = 'gbk_testwaitedfor0000000000000000000';
    const ws = workspace({ baseUrl: `http://127.0.0.1:${port}/v1`, apiKey: key } as never, imageManifest(3));
    const running = ws.run();
    // Up a moment later, on the port the run was given.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const t = await startTestSim({ port, timeScale: 600, keys: [{ label: 'main', key }] });
    const res = await running;
    expect(res.code, res.stderr).toBe(0);
    expect(res.stderr).toMatch(/the service is unreachable .*waiting for it/);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(3);
  });

  it('validate --online, estimate and me wait a few seconds for a service started a moment before them', async () => {
    const port = await freePort();
    const key = 'gbk_testwaitedfor0000000000000000000';
    const ws = workspace({ baseUrl: `http://127.0.0.1:${port}/v1`, apiKey: key } as never, imageManifest(2));
    // As `genbatch simulate … &` and the next line pasted together: the first question leaves before it listens.
    const asking = ['validate m.yaml --online', 'estimate m.yaml', 'me'].map((c) =>
      runCliInProcess(c.split(' '), ws.env, ws.dir),
    );
    await new Promise((resolve) => setTimeout(resolve, 300));
    await startTestSim({ port, timeScale: 600, keys: [{ label: 'main', key }] });
    for (const res of await Promise.all(asking)) expect(res.code, res.stderr).toBe(0);
  });

  it('a base URL without /v1 is exit 4 with the likely fix, before any request', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(t.sim, imageManifest(1));
    const base = t.sim.baseUrl.replace(/\/v1$/, '');
    const res = await runCliInProcess(['run', 'm.yaml'], { ...ws.env, GENBATCH_BASE_URL: base }, ws.dir);
    expect(res.code).toBe(4);
    expect(res.stderr).toContain(`does not end in /v1`);
    expect(res.stderr).toContain(`Did you mean ${base}/v1 ?`);
    // Another version segment is replaced, not kept in front of /v1.
    const v2 = await runCliInProcess(['run', 'm.yaml'], { ...ws.env, GENBATCH_BASE_URL: `${base}/v2` }, ws.dir);
    expect(v2.code).toBe(4);
    expect(v2.stderr).toContain(`Did you mean ${base}/v1 ?`);
    expect(t.sim.service.ledger.of('request')).toEqual([]);
  });
});

/** A loopback port that was just free: nothing listens there. */
async function freePort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  server.close();
  await once(server, 'close');
  return port;
}
