import { existsSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { keptName, thumbsBeside } from '../../src/copies/thumbs/kept.js';
import { thumbnailOf } from '../../src/copies/thumbs/maker-child.js';
import { FolderSink } from '../../src/sink/index.js';
import { cleanEnv, runCliInProcess } from '../helpers/cli.js';
import { raw, startTestReview } from '../helpers/review.js';
import { expectNoDoubleChargeAndVerifiedOutputs, workspace } from '../helpers/run.js';
import { startTestSim } from '../helpers/sim.js';

// Two outputs larger than a card, one the simulator's small size, and one larger whose item makes web copies.
const manifest = `version: 1
defaults: { model: studio-lite }
items:
  - { id: vase, prompt: "a vase [sim:large]" }
  - { id: jug, prompt: "a jug [sim:large]" }
  - { id: bowl, prompt: "a bowl" }
  - { id: cup, prompt: "a cup [sim:large]", derivatives: [{ format: webp, width: 400 }] }
`;

describe("a run makes review's thumbnails as it saves its outputs", () => {
  it('of each output larger than a card with no web copy: a first look at the cards decodes no original', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(t.sim, manifest);
    const result = await ws.run();
    expect(result.code, result.stderr).toBe(0);
    expectNoDoubleChargeAndVerifiedOutputs(t.sim, ws);
    const kept = thumbsBeside(ws.statePath);
    const thumbOf = (file: string) => join(kept, keptName(file));
    // Made by the run, before it ended: 400 pixels wide at most, the original's shape.
    for (const file of ['vase-1.png', 'jug-1.png']) {
      expect(await sharp(readFileSync(thumbOf(file))).metadata()).toMatchObject({
        format: 'webp',
        width: 320,
        height: 400,
      });
    }
    // None of an output no larger than a card (it is shown as it is), nor of one whose card shows its web copy.
    expect(existsSync(thumbOf('bowl-1.png'))).toBe(false);
    expect(existsSync(thumbOf('cup-1.png'))).toBe(false);
    expect(readdirSync(kept)).toHaveLength(2);

    // The review serves the run's thumbnail as it was kept, inside its first page too, and makes it again for none.
    const made = statSync(thumbOf('vase-1.png')).mtimeMs;
    const server = await startTestReview({
      statePath: ws.statePath,
      outputs: new FolderSink(ws.outDir),
      title: 'm',
      budget: null,
    });
    const asked = await fetch(`${server.base}/thumbs/vase-1.png?token=${server.token}`);
    expect(asked.headers.get('content-type')).toBe('image/webp');
    expect(Buffer.from(await asked.arrayBuffer()).equals(readFileSync(thumbOf('vase-1.png')))).toBe(true);
    const page = await raw(server.base, 'GET', `/?token=${server.token}`);
    expect(page.body).toContain(readFileSync(thumbOf('jug-1.png')).toString('base64'));
    expect(statSync(thumbOf('vase-1.png')).mtimeMs).toBe(made);
  });
});

describe("a rehearsal's thumbnails", () => {
  it('start over with it: a thumbnail kept from the rehearsal before is not shown for the new output', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'genbatch-rehearsal-'));
    writeFileSync(join(dir, 'm.yaml'), manifest);
    const rehearse = () => runCliInProcess(['run', 'm.yaml', '--simulate', '--time-scale', '600'], cleanEnv({}), dir);
    const kept = join(dir, '.genbatch', `m.rehearsal.thumbs`, keptName('vase-1.png'));
    const output = join(dir, 'out', 'm.rehearsal', 'vase-1.png');
    const thumbnails: Buffer[] = [];
    for (let i = 0; i < 2; i++) {
      expect((await rehearse()).code).toBe(0);
      expect(readFileSync(kept).equals(await thumbnailOf(readFileSync(output)))).toBe(true);
      thumbnails.push(readFileSync(kept));
    }
    // Each rehearsal's jobs are new, and so are its outputs' bytes.
    expect(thumbnails[0]!.equals(thumbnails[1]!)).toBe(false);
  });
});
