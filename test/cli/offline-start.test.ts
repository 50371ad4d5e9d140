import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cleanEnv, runCli } from '../helpers/cli.js';

/**
 * A command that never talks HTTP starts without the HTTP client: loading
 * undici costs a start its time (status --json on a big state read 0.15 s
 * slower), and on Node 23 and later it loads node:assert, which warns on the
 * user's terminal when NO_COLOR and FORCE_COLOR are both set.
 */
describe('commands that never talk HTTP', () => {
  it('validate, status, decisions and report load neither the HTTP client nor node:assert', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'genbatch-offline-'));
    writeFileSync(
      join(dir, 'm.yaml'),
      'version: 1\ndefaults: { model: studio-lite }\nitems:\n  - { id: a, prompt: "a mug" }\n',
    );
    // Preloaded into the CLI: at its exit, the built-in modules it loaded.
    const probe = join(dir, 'probe.cjs');
    writeFileSync(
      probe,
      "process.on('exit', () => require('node:fs').writeFileSync(process.env.PROBE_OUT, process.moduleLoadList.join('\\n')));\n",
    );
    for (const args of [['validate'], ['status'], ['status', '--simulate'], ['decisions'], ['report']]) {
      const out = join(dir, `${args.join('-')}.txt`);
      await runCli(
        [args[0]!, 'm.yaml', ...args.slice(1)],
        cleanEnv({ NODE_OPTIONS: `--require=${probe}`, PROBE_OUT: out }),
        dir,
      );
      const loaded = readFileSync(out, 'utf8').split('\n');
      expect(loaded.length, `genbatch ${args.join(' ')} ran`).toBeGreaterThan(50);
      expect(
        loaded.filter((m) => /^NativeModule (assert|_http_agent|_http_client|tls|https)$/.test(m)),
        `genbatch ${args.join(' ')}`,
      ).toEqual([]);
    }
  });
});
