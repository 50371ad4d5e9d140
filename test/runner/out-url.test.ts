import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCliInProcess } from '../helpers/cli.js';
import { imageManifest, workspace } from '../helpers/run.js';
import { startTestSim } from '../helpers/sim.js';

describe('an out dir given as a URL', () => {
  it('is a usage error that says what is supported: no folder named after the scheme, nothing submitted', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(t.sim, imageManifest(2));
    const result = await ws.run(['--out', 'gs://catalog/spring']);
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toMatch(
      /--out gs:\/\/catalog\/spring is a URL; outputs go to a folder.*Nothing was submitted/,
    );
    expect(existsSync(join(ws.dir, 'gs:'))).toBe(false);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(0);

    const url = workspace(t.sim, imageManifest(2, undefined, 'output: { dir: "ftp://host/outs" }\n'));
    const checked = await runCliInProcess(['validate', 'm.yaml'], url.env, url.dir);
    expect(checked.code).toBe(2);
    expect(checked.stderr).toMatch(
      /m\.yaml:\d+:\d+: output\.dir: .*ftp:\/\/host\/outs.*a folder.*or to a bucket \(s3:\/\/BUCKET\/PREFIX\)/,
    );
  });

  it('s3://BUCKET/PREFIX names a bucket; one with no valid bucket or with .. in its prefix is refused where it is written', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const good = workspace(t.sim, imageManifest(2, undefined, 'output: { dir: "s3://catalog/spring/2026" }\n'));
    const valid = await runCliInProcess(['validate', 'm.yaml'], good.env, good.dir);
    expect(valid.code, valid.stderr).toBe(0);
    expect(valid.stdout).toContain('outputs go to s3://catalog/spring/2026');
    const upper = workspace(t.sim, imageManifest(2, undefined, 'output: { dir: "s3://Catalog_Bucket/spring" }\n'));
    const refused = await runCliInProcess(['validate', 'm.yaml'], upper.env, upper.dir);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(
      /m\.yaml:\d+:\d+: output\.dir: s3:\/\/Catalog_Bucket\/spring does not name a bucket/,
    );
    const dots = await runCliInProcess(['run', 'm.yaml', '--out', 's3://catalog/../other'], good.env, good.dir);
    expect(dots.code).toBe(2);
    expect(dots.stderr).toMatch(/has "\." or "\.\." in its prefix/);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(0);
  });
});
