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
    expect(checked.stderr).toMatch(/m\.yaml:\d+:\d+: output\.dir: .*ftp:\/\/host\/outs.*a folder/);
  });
});
