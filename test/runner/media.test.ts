import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { openSqlite } from '../../src/store/driver.js';
import { describe, expect, it } from 'vitest';
import { CLIP, MUG, PIPELINE } from '../helpers/manifests.js';
import { expectNoDoubleChargeAndVerifiedOutputs, killLoop, readState, workspace } from '../helpers/run.js';
import { startTestSim } from '../helpers/sim.js';

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
describe('media inputs and video pipelines', () => {
  it('runs edits and the four video modes; uploads carry the right bytes, once per content and target; a rerun submits nothing', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(t.sim, PIPELINE, { 'mug.png': MUG, 'clip.mp4': CLIP });
    const res = await ws.run();
    expect(res.code, res.stdout + res.stderr).toBe(0);
    const ledger = t.sim.service.ledger;
    const models = ledger
      .of('charge')
      .map((c) => c.model)
      .sort();
    expect(models).toEqual([
      'motion-2',
      'motion-edit',
      'motion-extend',
      'motion-ref',
      'studio-edit',
      'studio-edit',
      'studio-xl',
    ]);
    const uploads = [...t.sim.service.uploads.byKey.values()];
    // mug.png as an edit input (target image) once for both edits, and as a reference (target video);
    // hero's output as a first frame, recolor's output as a reference, the clip as a source video.
    expect(uploads.map((u) => `${u.kind}/${u.target}/${u.contentType}`).sort()).toEqual([
      'image/image/image/png',
      'image/video/image/png',
      'image/video/image/png',
      'image/video/image/png',
      'video/video/video/mp4',
    ]);
    expect(uploads.every((u) => u.uploaded)).toBe(true);
    const byHash = new Set(uploads.map((u) => `${u.sha256}/${u.target}`));
    expect(byHash.size).toBe(uploads.length);
    expect(byHash.has(`${sha(MUG)}/image`) && byHash.has(`${sha(MUG)}/video`) && byHash.has(`${sha(CLIP)}/video`)).toBe(
      true,
    );
    const heroOut = readFileSync(join(ws.outDir, 'hero-1.png'));
    expect(byHash.has(`${sha(heroOut)}/video`)).toBe(true);
    const spinJob = readState(ws.statePath).attempts.find((a) => a.item_id === 'spin')!.job_id;
    const longerJob = t.sim.service.jobs.byId.get(
      readState(ws.statePath).attempts.find((a) => a.item_id === 'longer')!.job_id!,
    )!;
    expect(longerJob.model).toBe('motion-extend');
    expect(spinJob).toBeTruthy();
    expectNoDoubleChargeAndVerifiedOutputs(t.sim, ws);
    console.log(
      `pipeline ledger: ${ledger.of('upload-grant').length} upload grants, ${ledger.of('upload-put').length} PUTs, ${ledger.of('request').filter((r) => r.path === '/images' || r.path === '/videos').length} submissions, ${ledger.totals().charged} credits charged`,
    );

    const grants = ledger.of('upload-grant').length;
    const again = await ws.run();
    expect(again.code).toBe(0);
    expect(ledger.of('upload-grant')).toHaveLength(grants);
    expect(ledger.of('request').filter((r) => r.path === '/images' || r.path === '/videos')).toHaveLength(7);
  });

  it('reuses a still-valid upload in a later run, and uploads again once it expired', async () => {
    // Uploads live 2 s here; the runner wants 1 s of validity left.
    const t = await startTestSim({ timeScale: 600, uploadTtlSeconds: 1200 });
    const one = 'version: 1\ndefaults: { model: studio-edit }\nitems:\n  - { id: a, prompt: p, inputs: [mug.png] }\n';
    const ws = workspace(t.sim, one, { 'mug.png': MUG });
    expect((await ws.run()).code).toBe(0);
    expect(t.sim.service.ledger.of('upload-grant')).toHaveLength(1);
    await new Promise((r) => setTimeout(r, 1200));
    const { writeFileSync } = await import('node:fs');
    writeFileSync(join(ws.dir, 'm.yaml'), `${one}  - { id: b, prompt: q, inputs: [mug.png] }\n`);
    expect((await ws.run()).code).toBe(0);
    expect(t.sim.service.ledger.of('upload-grant')).toHaveLength(2);
  });

  it('a run killed during a PUT: the resumed run sends the same bytes to the same grant, no new upload', async () => {
    const t = await startTestSim({ timeScale: 600, uploadTtlSeconds: 86_400 });
    const one = 'version: 1\ndefaults: { model: studio-edit }\nitems:\n  - { id: a, prompt: p, inputs: [mug.png] }\n';
    const ws = workspace(t.sim, one, { 'mug.png': MUG });
    expect((await ws.run()).code).toBe(0);
    // As if killed after the grant was recorded but before its PUT was confirmed.
    const db = openSqlite(ws.statePath);
    db.prepare('UPDATE uploads SET confirmed = 0').run();
    db.close();
    const { writeFileSync } = await import('node:fs');
    writeFileSync(join(ws.dir, 'm.yaml'), `${one}  - { id: b, prompt: q, inputs: [mug.png] }\n`);
    expect((await ws.run()).code).toBe(0);
    const ledger = t.sim.service.ledger;
    expect(ledger.of('upload-grant')).toHaveLength(1);
    expect(ledger.of('upload-put').map((p) => p.status)).toEqual([200, 200]);
    expect(new Set(ledger.of('upload-put').map((p) => p.uploadKey)).size).toBe(1);
  });

  it('material that expired before use: the 400 leads to a new upload and a new attempt, no charge lost', async () => {
    const t = await startTestSim({ timeScale: 600, uploadTtlSeconds: 300 });
    const one = 'version: 1\ndefaults: { model: studio-edit }\nitems:\n  - { id: a, prompt: p, inputs: [mug.png] }\n';
    const ws = workspace(t.sim, one, { 'mug.png': MUG });
    expect((await ws.run()).code).toBe(0);
    // The state believes the upload valid for long; the service let it expire.
    const db = openSqlite(ws.statePath);
    db.prepare('UPDATE uploads SET expires_at = ?').run(Date.now() + 3_600_000);
    db.close();
    await new Promise((r) => setTimeout(r, 600));
    const { writeFileSync } = await import('node:fs');
    writeFileSync(join(ws.dir, 'm.yaml'), `${one}  - { id: b, prompt: q, inputs: [mug.png] }\n`);
    const res = await ws.run();
    expect(res.code, res.stdout).toBe(0);
    const posts = t.sim.service.ledger.of('request').filter((r) => r.path === '/images');
    expect(posts.map((p) => p.status)).toEqual([202, 400, 202]);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(2);
  });

  it('an input whose bytes are not what its slot takes is caught before anything is uploaded or submitted', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(
      t.sim,
      'version: 1\nitems:\n  - { id: a, model: studio-edit, prompt: p, inputs: [fake.png] }\n',
      { 'fake.png': 'not an image at all' },
    );
    const res = await ws.run();
    expect(res.code).toBe(2);
    expect(res.stderr).toContain('expected an image file, found content that is neither an image nor a video');
    // Nothing but the key's /me, asked while the manifest was checked: no upload, no submission.
    expect(
      t.sim.service.ledger
        .of('request')
        .map((r) => `${r.method} ${r.path}`)
        .filter((r) => r !== 'GET /me'),
    ).toEqual([]);
  });

  it('a video model whose mode does not fit the inputs is refused before the run (exit 2)', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(
      t.sim,
      'version: 1\nitems:\n  - { id: a, type: video, model: motion-extend, prompt: p, image: mug.png }\n',
      { 'mug.png': MUG },
    );
    const res = await ws.run();
    expect(res.code).toBe(2);
    expect(res.stderr).toContain('motion-extend is a video-extend model; image fits image-to-video');
    expect(t.sim.service.ledger.of('charge')).toHaveLength(0);
  });

  it('when a dependency fails, its dependents end skipped with the reason, and exit code 1', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(t.sim, PIPELINE.replace('"A mug"', '"A mug [sim:fail]"'), {
      'mug.png': MUG,
      'clip.mp4': CLIP,
    });
    const res = await ws.run(['--max-retries', '0']);
    expect(res.code).toBe(1);
    const items = Object.fromEntries(readState(ws.statePath).items.map((i) => [i.id, [i.state, i.error_code]]));
    expect(items.hero).toEqual(['failed', 'GENERATION_FAILED']);
    expect(items.spin).toEqual(['skipped', 'DEPENDENCY_FAILED']);
    expect(items.longer).toEqual(['skipped', 'DEPENDENCY_FAILED']);
    expect(items.moodboard).toEqual(['done', null]);
    expect(res.stdout).toContain('skipped 2');
    expect(t.sim.service.ledger.of('charge').map((c) => c.model)).not.toContain('motion-2');
  });

  it('a chain image → video → extend survives a kill loop: one charge per item, no duplicate upload of a valid file', {
    timeout: 120_000,
  }, async () => {
    // Uploads stay valid throughout (a day of service time): a second upload of the same bytes would be a duplicate.
    const t = await startTestSim({
      timeScale: 600,
      videoSeconds: [300, 600],
      latencyMs: [0, 10],
      seed: 5,
      uploadTtlSeconds: 86_400,
    });
    const ws = workspace(t.sim, PIPELINE, { 'mug.png': MUG, 'clip.mp4': CLIP });
    const { kills, final } = await killLoop(t.sim, ws, 10);
    expect(kills).toBe(10);
    expect(final.code, final.stdout).toBe(0);
    const charges = t.sim.service.ledger.of('charge');
    expect(charges).toHaveLength(7);
    expect(new Set(charges.map((c) => c.prompt)).size).toBe(7);
    const uploaded = [...t.sim.service.uploads.byKey.values()].filter((u) => u.uploaded);
    const perContent = new Map<string, number>();
    for (const u of uploaded)
      perContent.set(`${u.sha256}/${u.target}`, (perContent.get(`${u.sha256}/${u.target}`) ?? 0) + 1);
    expect(
      [...perContent.values()].every((n) => n === 1),
      JSON.stringify([...perContent]),
    ).toBe(true);
    expectNoDoubleChargeAndVerifiedOutputs(t.sim, ws);
  });
});
