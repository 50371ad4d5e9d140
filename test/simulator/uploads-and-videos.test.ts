import { describe, expect, it } from 'vitest';
import { StorageError, type VideoSubmission } from '../../src/api/index.js';
import { makeMp4, makePng } from '../../src/simulator/media.js';
import { newKey, rejection, startTestSim, type TestSim } from '../helpers/sim.js';

const PNG = makePng('input');
const MP4 = makeMp4('input');

async function upload(
  t: TestSim,
  kind: 'image' | 'video',
  target: 'image' | 'video',
  bytes = kind === 'image' ? PNG : MP4,
): Promise<string> {
  const contentType = kind === 'image' ? 'image/png' : 'video/mp4';
  const grant = await t.client.createUpload({ kind, target, contentType, size: bytes.length });
  expect(grant.expiresAt!.getTime()).toBeGreaterThan(Date.now());
  await t.client.putUpload(grant.uploadUrl, bytes, contentType, bytes.length);
  return grant.key;
}

const video = (model: string, inputs: Partial<VideoSubmission>): VideoSubmission => ({
  prompt: 'slow turntable spin',
  model,
  duration: '5',
  resolution: '720p',
  aspectRatio: '16:9',
  ...inputs,
});

describe('uploads', () => {
  it('grant, PUT, then an edit with inputs [{ key }] on an edit model', async () => {
    const t = await startTestSim();
    const key = await upload(t, 'image', 'image');
    const job = await t.client.submitImage(
      { prompt: 'make it matte black', model: 'studio-edit', inputs: [{ key }] },
      newKey(),
    );
    expect(job.status).toBe('PROCESSING');
    expect(t.sim.service.ledger.of('upload-put')).toMatchObject([{ status: 200, bytes: PNG.length }]);
  });

  it('storage refuses a PUT whose Content-Type or size differs from the grant', async () => {
    const t = await startTestSim();
    const grant = await t.client.createUpload({
      kind: 'image',
      target: 'image',
      contentType: 'image/png',
      size: PNG.length,
    });
    const wrongType = await rejection(t.client.putUpload(grant.uploadUrl, PNG, 'image/jpeg', PNG.length));
    expect(wrongType).toBeInstanceOf(StorageError);
    expect(wrongType.message).toMatch(/Content-Type/);
    const short = PNG.subarray(0, 10);
    const wrongSize = await rejection(t.client.putUpload(grant.uploadUrl, short, 'image/png', short.length));
    expect(wrongSize.status).toBe(400);
    const tampered = grant.uploadUrl.replace(/signature=[0-9a-f]+/, 'signature=00');
    expect((await rejection(t.client.putUpload(tampered, PNG, 'image/png', PNG.length))).status).toBe(403);
  });

  it('refuses a key nothing was uploaded for, and material that expired', async () => {
    const t = await startTestSim({ timeScale: 1, uploadTtlSeconds: 0.4 });
    const grant = await t.client.createUpload({
      kind: 'image',
      target: 'image',
      contentType: 'image/png',
      size: PNG.length,
    });
    const notYet = await rejection(
      t.client.submitImage({ prompt: 'x', model: 'studio-edit', inputs: [{ key: grant.key }] }, newKey()),
    );
    expect(notYet.details.field).toBe('inputs[0].key');
    const key = await upload(t, 'image', 'image');
    await new Promise((r) => setTimeout(r, 500));
    const expired = await rejection(
      t.client.submitImage({ prompt: 'x', model: 'studio-edit', inputs: [{ key }] }, newKey()),
    );
    expect(expired.code).toBe('VALIDATION_ERROR');
    expect(expired.message).toMatch(/expired/);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(0);
  });

  it('checks the grant request: kind, target, content type, size', async () => {
    const t = await startTestSim();
    const cases = [
      [{ kind: 'audio', target: 'image', contentType: 'image/png', size: 1 }, 'kind'],
      [{ kind: 'image', target: 'image', contentType: 'text/plain', size: 1 }, 'contentType'],
      [{ kind: 'image', target: 'image', contentType: 'image/png', size: 0 }, 'size'],
      [{ kind: 'video', target: 'image', contentType: 'video/mp4', size: 1 }, 'kind'],
    ] as const;
    for (const [body, field] of cases) {
      const res = await t.raw('POST', '/uploads', { body });
      expect(res.status).toBe(400);
      expect(res.json.error.details.field).toBe(field);
    }
  });
});

describe('the four video modes', () => {
  it('image-to-video takes imageKey', async () => {
    const t = await startTestSim();
    const imageKey = await upload(t, 'image', 'video');
    await expect(t.client.submitVideo(video('motion-2', { imageKey }), newKey())).resolves.toMatchObject({
      status: 'PROCESSING',
    });
    expect(t.sim.service.ledger.of('charge')[0]!.credits).toBe(100);
  });

  it('reference-to-video takes referenceImageKeys', async () => {
    const t = await startTestSim();
    const keys = [await upload(t, 'image', 'video'), await upload(t, 'image', 'video')];
    await expect(
      t.client.submitVideo(video('motion-ref', { referenceImageKeys: keys }), newKey()),
    ).resolves.toBeDefined();
  });

  it('video-extend and video-edit take videoKey or sourceJobId of a completed video job', async () => {
    const t = await startTestSim({ timeScale: 600, videoSeconds: [60, 60] });
    const videoKey = await upload(t, 'video', 'video');
    const extended = await t.client.submitVideo(video('motion-extend', { videoKey }), newKey());
    await expect(t.client.submitVideo(video('motion-edit', { videoKey }), newKey())).resolves.toBeDefined();
    const early = await rejection(t.client.submitVideo(video('motion-extend', { sourceJobId: extended.id }), newKey()));
    expect(early.details.field).toBe('sourceJobId');
    let done = await t.client.getJob(extended.id, 30);
    while (done.status === 'PROCESSING') done = await t.client.getJob(extended.id, 30); // the wait is time-scaled too
    expect(done.status).toBe('COMPLETED');
    await expect(
      t.client.submitVideo(video('motion-extend', { sourceJobId: done.id }), newKey()),
    ).resolves.toBeDefined();
    const dl = await t.client.download(done.outputs[0]!.downloadUrl);
    expect(dl.contentType).toBe('video/mp4');
    dl.cancel();
  });

  it('the model’s mode decides which input is required', async () => {
    const t = await startTestSim();
    const imageKey = await upload(t, 'image', 'video');
    const forImageEdit = await upload(t, 'image', 'image');
    const cases: [VideoSubmission, string][] = [
      [video('motion-2', {}), 'imageKey'],
      [video('motion-extend', { imageKey }), 'imageKey'],
      [video('motion-ref', { referenceImageKeys: [] }), 'referenceImageKeys'],
      [video('motion-2', { imageKey: forImageEdit }), 'imageKey'],
      [video('motion-2', { imageKey, duration: '7' }), 'duration'],
      [{ ...video('motion-2', { imageKey }), duration: 5 as unknown as string }, 'duration'],
    ];
    for (const [body, field] of cases) {
      const e = await rejection(t.client.submitVideo(body, newKey()));
      expect(e.code, JSON.stringify(body)).toBe('VALIDATION_ERROR');
      expect(e.details.field).toBe(field);
    }
    expect(t.sim.service.ledger.of('charge')).toHaveLength(0);
  });
});
