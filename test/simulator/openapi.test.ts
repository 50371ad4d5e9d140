import { readFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { makeMp4, makePng } from '../../src/simulator/media.js';
import { imageBody, newKey, startTestSim, type TestSim } from '../helpers/sim.js';

const doc = parse(readFileSync(new URL('../../schemas/openapi.yaml', import.meta.url), 'utf8'));
const ajv = new Ajv2020({ strict: false, allErrors: true });
(addFormats as unknown as (a: Ajv2020) => void)(ajv);
ajv.addSchema(doc, 'openapi');

/** The schema the OpenAPI file gives for this operation's answer, by status or `default`. */
function responseSchemaRef(method: string, template: string, status: number): string {
  const responses = doc.paths[template][method.toLowerCase()].responses;
  const entry = responses[String(status)] ?? responses.default;
  expect(entry, `${method} ${template} ${status} is described`).toBeDefined();
  const resolved = entry.$ref ? doc.components.responses[entry.$ref.split('/').pop()] : entry;
  const ref = resolved.content['application/json'].schema.$ref as string;
  return `openapi${ref}`;
}

async function check(
  t: TestSim,
  method: string,
  template: string,
  path: string,
  init: Parameters<TestSim['raw']>[2] = {},
  expectStatus?: number,
) {
  const res = await t.raw(method, path, init);
  if (expectStatus !== undefined) expect(res.status, `${method} ${path}`).toBe(expectStatus);
  const validate = ajv.getSchema(responseSchemaRef(method, template, res.status))!;
  const valid = validate(res.json);
  expect(valid, `${method} ${path} ${res.status}: ${ajv.errorsText(validate.errors)}`).toBe(true);
  return res.json;
}

async function uploadFor(t: TestSim, kind: 'image' | 'video', target: 'image' | 'video'): Promise<string> {
  const bytes = kind === 'image' ? makePng('x') : makeMp4('x');
  const contentType = kind === 'image' ? 'image/png' : 'video/mp4';
  const grant = await check(
    t,
    'POST',
    '/uploads',
    '/uploads',
    { body: { kind, target, contentType, size: bytes.length } },
    200,
  );
  await t.client.putUpload(grant.uploadUrl, bytes, contentType, bytes.length);
  return grant.key;
}

describe('the simulator answers as schemas/openapi.yaml describes', () => {
  it('every endpoint, success and error answers', async () => {
    const t = await startTestSim({ timeScale: 600, imageSeconds: [30, 30], videoSeconds: [60, 60] });
    await check(t, 'GET', '/me', '/me', {}, 200);
    await check(t, 'GET', '/me', '/me', { key: 'gbk_wrong' }, 401);
    await check(t, 'GET', '/models', '/models?type=image', {}, 200);
    await check(t, 'GET', '/models', '/models?type=video', {}, 200);
    await check(t, 'GET', '/models', '/models?type=audio', {}, 400);

    const editKey = await uploadFor(t, 'image', 'image');
    const frameKey = await uploadFor(t, 'image', 'video');
    await check(t, 'POST', '/images', '/images', { body: imageBody(), headers: { 'idempotency-key': newKey() } }, 202);
    const edit = await check(
      t,
      'POST',
      '/images',
      '/images',
      {
        body: { prompt: 'matte', model: 'studio-edit', inputs: [{ key: editKey }] },
        headers: { 'idempotency-key': newKey() },
      },
      202,
    );
    await check(
      t,
      'POST',
      '/images',
      '/images',
      { body: { ...imageBody(), resolution: '9K' }, headers: { 'idempotency-key': newKey() } },
      400,
    );
    await check(
      t,
      'POST',
      '/images',
      '/images',
      { body: imageBody('x [sim:block]'), headers: { 'idempotency-key': newKey() } },
      422,
    );
    const video = await check(
      t,
      'POST',
      '/videos',
      '/videos',
      {
        body: {
          prompt: 'spin',
          model: 'motion-2',
          duration: '5',
          resolution: '720p',
          aspectRatio: '16:9',
          imageKey: frameKey,
        },
        headers: { 'idempotency-key': newKey() },
      },
      202,
    );
    const failing = await check(
      t,
      'POST',
      '/images',
      '/images',
      { body: imageBody('x [sim:fail]'), headers: { 'idempotency-key': newKey() } },
      202,
    );

    await check(t, 'GET', '/jobs/{id}', `/jobs/${edit.job.id}`, {}, 200);
    for (const id of [edit.job.id, video.job.id, failing.job.id]) {
      let job = (await check(t, 'GET', '/jobs/{id}', `/jobs/${id}?wait=30`, {}, 200)).job;
      while (job.status === 'PROCESSING')
        job = (await check(t, 'GET', '/jobs/{id}', `/jobs/${id}?wait=30`, {}, 200)).job;
      expect(['COMPLETED', 'FAILED']).toContain(job.status);
    }
    await check(t, 'GET', '/jobs/{id}', '/jobs/job_missing', {}, 404);
    const page = await check(t, 'GET', '/jobs', '/jobs?limit=2', {}, 200);
    await check(t, 'GET', '/jobs', `/jobs?limit=2&cursor=${page.nextCursor}`, {}, 200);
    await check(t, 'GET', '/jobs', '/jobs?limit=500', {}, 400);
  });
});
