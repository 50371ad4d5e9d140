import { describe, expect, it } from 'vitest';
import { expectKeyNowhere, imageManifest, outputFilesIn, readState, workspace } from '../helpers/run.js';
import { startTestSim } from '../helpers/sim.js';

describe('hostile answers from the service and its storage', () => {
  it('an output link that is not http(s) is never followed: nothing is written, and the paid job waits for the next run', async () => {
    const t = await startTestSim({ timeScale: 600 });
    t.sim.service.inject = (req) => {
      const m = /^\/jobs\/([^/]+)$/.exec(req.path);
      if (req.method !== 'GET' || !m) return undefined;
      return {
        status: 200,
        headers: {},
        body: {
          job: {
            id: m[1],
            status: 'COMPLETED',
            outputs: [{ url: 'file:///etc/passwd', downloadUrl: 'file:///etc/passwd' }],
          },
        },
      };
    };
    const ws = workspace(t.sim, imageManifest(1));
    const res = await ws.run();
    expect(res.code).toBe(1);
    // A read error never ends a paid job: it stays running, with the reason, for the next run to ask again.
    expect(readState(ws.statePath).items[0]).toMatchObject({ state: 'running', error_code: 'ResponseShapeError' });
    expect(res.stdout).toMatch(/failures by code: ResponseShapeError 1/);
    expect(t.sim.service.ledger.of('download')).toHaveLength(0);
    expect(outputFilesIn(ws.outDir)).toEqual([]);
    expectKeyNowhere(ws.dir, t.sim.apiKey);
  });

  it('an output served as text/html is refused, refreshed, and never saved under an image name', async () => {
    const t = await startTestSim({ timeScale: 600 });
    t.sim.storage.inject = (_path, seen) => (seen === 0 ? 'html' : undefined);
    const ws = workspace(t.sim, imageManifest(1));
    const res = await ws.run();
    expect(res.code).toBe(0);
    expect(t.sim.service.ledger.of('download')).toHaveLength(2);
    expect(outputFilesIn(ws.outDir)).toEqual(['item-0-1.png']);
  });

  it('an endless body is cut off at --max-output-mb, leaves no file, and the item says why', async () => {
    const t = await startTestSim({ timeScale: 600 });
    t.sim.storage.inject = () => 'endless';
    const ws = workspace(t.sim, imageManifest(1));
    const res = await ws.run(['--max-output-mb', '1']);
    expect(res.code).toBe(1);
    expect(readState(ws.statePath).items[0]).toMatchObject({ state: 'downloading', error_code: 'DOWNLOAD_FAILED' });
    expect(res.stdout).toContain('DOWNLOAD_FAILED');
    expect(outputFilesIn(ws.outDir)).toEqual([]);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(1);
  });

  it('a model list with surprises (extra fields, numeric durations, unknown kinds) still validates and runs', async () => {
    const t = await startTestSim({ timeScale: 600 });
    t.sim.service.inject = (req) =>
      req.path === '/models' && req.query.get('type') === 'image'
        ? {
            status: 200,
            headers: {},
            body: [
              { slug: 'studio-lite', kind: 'generate', creditCost: 2, beta: true, tags: ['x'] },
              { model: 'odd', kind: 'upscale', creditCost: 'free' },
            ],
          }
        : undefined;
    const ws = workspace(t.sim, imageManifest(2));
    const res = await ws.run();
    expect(res.code, res.stdout + res.stderr).toBe(0);
    expect(res.stdout).toContain('credits: 4 charged');
  });
});
