import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { workspace } from '../helpers/run.js';
import { startTestSim } from '../helpers/sim.js';

type Mode = 'ok' | 'fail' | 'hang';

/** A local webhook receiver: records each POST (its path and JSON), and answers as `mode` says. */
async function receiver(mode: Mode) {
  const got: { path: string; body: any; at: number; authorization: string | undefined }[] = [];
  const server = createServer((req, res) => {
    let text = '';
    req.on('data', (d) => (text += d));
    req.on('end', () => {
      got.push({ path: req.url!, body: JSON.parse(text), at: Date.now(), authorization: req.headers.authorization });
      if (mode === 'ok') res.writeHead(204).end();
      else if (mode === 'fail') res.writeHead(500).end('no');
      // 'hang': never answers
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  onTestFinished(() => {
    server.closeAllConnections();
    return new Promise<void>((r) => server.close(() => r()));
  });
  const port = (server.address() as AddressInfo).port;
  return {
    got,
    url: `http://hook:s3cret-pass@127.0.0.1:${port}/hooks/T0KEN-in-path`,
    events: () => got.map((g) => g.body.event),
  };
}

const lite = (n: number, extra = '') =>
  `version: 1\ndefaults: { model: studio-lite }\nitems:\n${Array.from({ length: n }, (_, i) => `  - { id: i${i}, prompt: "product ${i}${extra}" }\n`).join('')}`;

describe('run --notify', () => {
  it('a run that waits for the daily cap and then finishes: the webhook gets "waiting-daily-cap" then "ended", with counts and credits; its secret is never logged', async () => {
    // A key day of 2 s; the run is told a cap of 6 credits (3 jobs a day) for 5 jobs.
    const t = await startTestSim({ timeScale: 43_200, linkTtlSeconds: 7 * 86_400 });
    const hook = await receiver('ok');
    const ws = workspace(t.sim, lite(5), {}, 43_200);
    const res = await ws.run(['--daily-cap', '6', '--notify', hook.url]);
    expect(res.code, res.stdout).toBe(0);
    expect(hook.events()).toContain('waiting-daily-cap');
    expect(hook.events().at(-1)).toBe('ended');
    const ended = hook.got.at(-1)!;
    expect(ended.path).toBe('/hooks/T0KEN-in-path');
    expect(ended.authorization).toBe(`Basic ${Buffer.from('hook:s3cret-pass').toString('base64')}`);
    expect(ended.body).toMatchObject({
      manifest: join(ws.dir, 'm.yaml'),
      counts: { done: 5 },
      credits: { charged: 10, refunded: 0, net: 10 },
      reason: expect.stringMatching(/finished: 5 of 5/),
    });
    expect(ended.body.run).toMatch(/^[0-9a-f-]{36}$/);
    expect(Date.parse(ended.body.time)).not.toBeNaN();
    const log = readFileSync(join(ws.dir, '.genbatch', 'm.log'), 'utf8');
    expect(log).toMatch(/notification sent/);
    expect(log).not.toMatch(/s3cret-pass|T0KEN-in-path/);
    expect(`${res.stdout}${res.stderr}`).not.toMatch(/s3cret-pass|T0KEN-in-path/);
  });

  it('items left waiting for a decision are said in one message, not one per item, then the end', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const hook = await receiver('ok');
    const gated = `${lite(3)}${[0, 1, 2].map((i) => `  - { id: f${i}, prompt: "final ${i}", approved: [i${i}] }\n`).join('')}`;
    const ws = workspace(t.sim, gated);
    const res = await ws.run(['--notify', hook.url]);
    expect(res.code, res.stdout).toBe(1);
    expect(hook.events()).toEqual(['waiting-for-decision', 'ended']);
    expect(hook.got[0]!.body.reason).toMatch(/^3 items wait for a decision on 3 gates, 6 credits if approved/);
    expect(hook.got[0]!.body.counts).toMatchObject({ waiting: 3 });
  });

  it('a run with no progress for --stall-minutes says so, once per stall; a notify command gets the same events on stdin', async () => {
    // Jobs of 2 s against a stall of 0.6 s.
    const t = await startTestSim({ timeScale: 600, imageSeconds: [1200, 1200] });
    const ws = workspace(t.sim, lite(2));
    const file = join(ws.dir, 'events.jsonl');
    const res = await ws.run(['--notify-command', `cat >> '${file}'`, '--stall-minutes', '0.01']);
    expect(res.code).toBe(0);
    const events = readFileSync(file, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(events.map((e) => e.event)).toContain('stalled');
    expect(events.find((e) => e.event === 'stalled').reason).toMatch(
      /no item ended and nothing was submitted for \d+ s/,
    );
    expect(events.at(-1)).toMatchObject({ event: 'ended', counts: { done: 2 } });
  });

  it('a receiver that answers 500 or never answers changes neither the outcome nor, beyond its 5 s deadline, the time', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const timed = async (mode: Mode | 'none') => {
      const ws = workspace(t.sim, lite(3, ` ${mode}`));
      const hook = mode === 'none' ? undefined : await receiver(mode);
      const started = Date.now();
      const res = await ws.run(hook ? ['--notify', hook.url] : []);
      return { res, seconds: (Date.now() - started) / 1000, hook, ws };
    };
    const plain = await timed('none');
    const failing = await timed('fail');
    const hanging = await timed('hang');
    for (const run of [plain, failing, hanging]) expect(run.res.code).toBe(0);
    // A 500 is retried (3 tries within the deadline) and logged, host only.
    expect(failing.hook!.got.filter((g) => g.body.event === 'ended')).toHaveLength(3);
    const undelivered = readFileSync(join(failing.ws.dir, '.genbatch', 'm.log'), 'utf8')
      .split('\n')
      .filter((l) => l.includes('notification not delivered'));
    expect(undelivered.length).toBeGreaterThan(0);
    for (const line of undelivered)
      expect(JSON.parse(line)).toMatchObject({
        target: expect.stringMatching(/^webhook 127\.0\.0\.1:\d+$/),
        error: 'the webhook answered 500',
      });
    expect(hanging.hook!.got.map((g) => g.body.event)).toContain('ended');
    expect(failing.seconds).toBeLessThan(plain.seconds + 5 + 3);
    expect(hanging.seconds).toBeLessThan(plain.seconds + 5 + 3);
  });

  it('refuses --notify with --notify-command, and a --notify that is no http(s) URL, without showing it', async () => {
    const t = await startTestSim();
    const ws = workspace(t.sim, lite(1));
    const both = await ws.run(['--notify', 'http://127.0.0.1:1/x', '--notify-command', 'true']);
    expect(both.code).toBe(2);
    const bad = await ws.run(['--notify', 'ftp://user:pw-secret@host/x']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).not.toContain('pw-secret');
    expect(t.sim.service.ledger.of('charge')).toEqual([]);
  });
});
