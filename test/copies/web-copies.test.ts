import { createHash } from 'node:crypto';
import { readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { openSqlite } from '../../src/store/driver.js';
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { TRAINED_ALGORITHMIC_MEDIA } from '../../src/copies/xmp.js';
import { FolderSink } from '../../src/sink/index.js';
import { runCliInProcess } from '../helpers/cli.js';
import { raw, startTestReview } from '../helpers/review.js';
import { readState, workspace } from '../helpers/run.js';
import { startTestSim } from '../helpers/sim.js';

const manifest = `version: 1
defaults: { model: studio-lite }
derivatives:
  - { format: webp, width: 96 }
  - { format: jpeg, width: 400, quality: 80 }
items:
  - { id: mug, prompt: "a mug" }
  - { id: bowl, prompt: "a bowl" }
  - { id: plate, prompt: "a plate", mark: false }
`;

const sha = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

describe('web copies of each image output (derivatives)', () => {
  it('are made beside the untouched original: fitted, never enlarged, marked as AI-made, listed in the results', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(t.sim, manifest);
    const result = await ws.run(['--sidecars']);
    expect(result.code, result.stderr).toBe(0);
    const state = readState(ws.statePath);
    for (const o of state.outputs) {
      // The original is exactly what was paid for and verified.
      expect(sha(readFileSync(join(ws.outDir, o.path)))).toBe(o.sha256);
    }
    const small = readFileSync(join(ws.outDir, 'mug-1.96w.webp'));
    expect(await sharp(small).metadata()).toMatchObject({ format: 'webp', width: 96, height: 96, space: 'srgb' });
    // Asked for 400 wide from a 192 wide original: kept at 192, not enlarged.
    const large = readFileSync(join(ws.outDir, 'mug-1.400w.jpg'));
    expect(await sharp(large).metadata()).toMatchObject({ format: 'jpeg', width: 192, height: 192 });

    const job = state.attempts.find((a) => a.item_id === 'mug')!.job_id!;
    const xmp = (await sharp(small).metadata()).xmpAsString ?? '';
    expect(xmp).toContain(
      `<Iptc4xmpExt:DigitalSourceType>${TRAINED_ALGORITHMIC_MEDIA}</Iptc4xmpExt:DigitalSourceType>`,
    );
    expect(xmp).toContain('<genbatch:model>studio-lite</genbatch:model>');
    expect(xmp).toContain(`<genbatch:jobId>${job}</genbatch:jobId>`);
    expect(xmp).toContain('<genbatch:itemId>mug</genbatch:itemId>');
    expect((await sharp(large).metadata()).xmpAsString).toContain('trainedAlgorithmicMedia');
    // mark: false on the plate: its copies say nothing of where they came from.
    const plate = await sharp(readFileSync(join(ws.outDir, 'plate-1.96w.webp'))).metadata();
    expect(plate.xmp).toBeUndefined();

    const rows = readFileSync(join(ws.outDir, 'results.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    const mug = rows.find((r) => r.id === 'mug');
    expect(mug.files[0].derivatives).toEqual([
      { path: 'mug-1.400w.jpg', format: 'jpeg', width: 192, height: 192, bytes: large.length, sha256: sha(large) },
      { path: 'mug-1.96w.webp', format: 'webp', width: 96, height: 96, bytes: small.length, sha256: sha(small) },
    ]);
    expect(readFileSync(join(ws.outDir, 'results.csv'), 'utf8')).toContain('mug-1.400w.jpg mug-1.96w.webp');
    const sidecar = JSON.parse(readFileSync(join(ws.outDir, 'mug-1.png.json'), 'utf8'));
    expect(sidecar.file.derivatives).toEqual(mug.files[0].derivatives);
    // The gallery links each copy from its card.
    const gallery = readFileSync(join(ws.outDir, 'index.html'), 'utf8');
    // The review app lists each version's copies, and serves a recorded copy (nothing else).
    const review = await startTestReview({
      statePath: ws.statePath,
      outputs: new FolderSink(ws.outDir),
      title: 'm',
      budget: null,
    });
    const versions = JSON.parse((await raw(review.base, 'GET', `/api/versions?id=mug&token=${review.token}`)).body);
    expect(versions.versions[0].copies).toEqual([
      { path: 'mug-1.400w.jpg', format: 'jpeg', width: 192, height: 192 },
      { path: 'mug-1.96w.webp', format: 'webp', width: 96, height: 96 },
    ]);
    const served = await raw(review.base, 'GET', `/files/mug-1.96w.webp?token=${review.token}`);
    expect(served.status).toBe(200);
    expect(served.headers['content-type']).toBe('image/webp');
    expect((await raw(review.base, 'GET', `/files/mug-1.97w.webp?token=${review.token}`)).status).toBe(404);
    expect(gallery).toContain(
      '"copies":[{"href":"mug-1.400w.jpg","label":"jpeg 192×192"},{"href":"mug-1.96w.webp","label":"webp 96×96"}]',
    );
  });

  it('a resumed run makes only the copies that are missing, and pays for nothing', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(t.sim, manifest);
    expect((await ws.run()).code).toBe(0);
    // As after a kill between two copies: one is neither written nor recorded.
    const db = openSqlite(ws.statePath);
    db.prepare("DELETE FROM derivatives WHERE path = 'bowl-1.400w.jpg'").run();
    db.close();
    rmSync(join(ws.outDir, 'bowl-1.400w.jpg'));
    const untouched = statSync(join(ws.outDir, 'bowl-1.96w.webp')).mtimeMs;
    const again = await ws.run();
    expect(again.code, again.stderr).toBe(0);
    expect(statSync(join(ws.outDir, 'bowl-1.400w.jpg')).size).toBeGreaterThan(0);
    expect(statSync(join(ws.outDir, 'bowl-1.96w.webp')).mtimeMs).toBe(untouched);
    const log = readFileSync(join(ws.dir, '.genbatch', 'm.log'), 'utf8');
    const made = log.split('\n').filter((l) => l.includes('"kind":"copy-made"'));
    expect(made).toHaveLength(7);
    expect(made.at(-1)).toContain('bowl-1.400w.jpg');
    expect(t.sim.service.ledger.of('charge')).toHaveLength(3);
  });

  it('are refused on a video item, and when two would share a name, where they are written', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(
      t.sim,
      `version: 1
items:
  - id: spin
    type: video
    model: motion-2
    prompt: "a spin"
    duration: 5
    derivatives: [{ format: webp, width: 800 }]
  - id: mug
    model: studio-lite
    prompt: "a mug"
    derivatives: [{ format: webp, width: 800 }, { format: webp, width: 800, quality: 50 }]
`,
    );
    const result = await runCliInProcess(['validate', 'm.yaml'], ws.env, ws.dir);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(
      /m\.yaml:8:\d+: items\[0\]\.derivatives: derivatives apply only to image outputs; a video item cannot have them/,
    );
    expect(result.stderr).toMatch(
      /m\.yaml:12:\d+: items\[1\]\.derivatives: two derivatives would both be named \*\.800w\.webp/,
    );
  });
});
