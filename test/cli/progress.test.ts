import { execFile } from 'node:child_process';
import { liveView } from '../../src/library/views.js';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { Progress, liveLine, type LiveFacts } from '../../src/cli/progress.js';
import { localDateTime, localTime, num } from '../../src/cli/format.js';
import { ITEM_STATES, Store, type ItemState } from '../../src/store/index.js';
import { imageManifest, workspace } from '../helpers/run.js';
import { CLI, cleanEnv } from '../helpers/cli.js';
import { startTestSim } from '../helpers/sim.js';

const counts = (over: Partial<Record<ItemState, number>>) => ({
  ...(Object.fromEntries(ITEM_STATES.map((s) => [s, 0])) as Record<ItemState, number>),
  ...over,
});
const facts = (over: Partial<LiveFacts> = {}): LiveFacts => ({
  counts: counts({ done: 12_345, running: 10, queued: 3, downloading: 2, failed: 7, pending: 87_633 }),
  total: 100_000,
  credits: { charged: 98_800, refunded: 40 },
  etaSeconds: 3 * 3600 + 12 * 60,
  waitingUntil: undefined,
  pace: { sent: 10, limit: 10, windowMs: 60_000, timeScale: 1 },
  now: Date.parse('2026-11-23T10:00:00Z'),
  ...over,
});

/** A terminal of that width (0: one that reports none), and what was written to it. */
function terminal(columns: number): { out: NodeJS.WriteStream; written: () => string } {
  let written = '';
  const out = Object.assign(
    new Writable({
      write: (chunk, _e, done) => {
        written += String(chunk);
        done();
      },
    }),
    { isTTY: true, columns },
  ) as unknown as NodeJS.WriteStream;
  return { out, written: () => written };
}

describe('numbers', () => {
  it('have thousands separators as en-US writes them, whole or not', () => {
    const intl = new Intl.NumberFormat('en-US');
    for (const n of [
      0,
      7,
      -7,
      999,
      1000,
      -1000,
      12_345,
      100_000,
      999_999,
      1_000_000,
      -20_000_000,
      Number.MAX_SAFE_INTEGER,
      2.5,
      1234.5678,
      -0.25,
    ])
      expect(num(n)).toBe(intl.format(n));
  });
});

describe('times of day', () => {
  it('are the local hour and minute with the zone as its offset from UTC, in any zone, and dates as en-GB writes them', () => {
    const zone = process.env.TZ;
    try {
      const at = Date.UTC(2026, 10, 24, 0, 7);
      for (const [tz, time, dateTime] of [
        ['UTC', '00:07 UTC', '24 Nov, 00:07 UTC'],
        ['Europe/Paris', '01:07 UTC+1', '24 Nov, 01:07 UTC+1'],
        ['Asia/Kolkata', '05:37 UTC+5:30', '24 Nov, 05:37 UTC+5:30'],
        ['America/St_Johns', '20:37 UTC-3:30', '23 Nov, 20:37 UTC-3:30'],
      ] as const) {
        process.env.TZ = tz;
        expect(localTime(at)).toBe(time);
        expect(localDateTime(at)).toBe(dateTime);
        // The hour and minute agree with Intl's for the zone.
        const intl = new Intl.DateTimeFormat('en-GB', { hour: '2-digit', minute: '2-digit', timeZone: tz }).format(at);
        expect(localTime(at).startsWith(intl)).toBe(true);
      }
      process.env.TZ = 'Europe/Paris';
      expect(localTime(Date.UTC(2026, 6, 1, 12, 0))).toBe('14:00 UTC+2'); // summer time
    } finally {
      if (zone === undefined) delete process.env.TZ;
      else process.env.TZ = zone;
    }
  });
});

describe('the live line', () => {
  it('leads with the percentage, done/total and the ETA, then running, failed, credits and the pace', () => {
    expect(liveLine(facts())).toBe(
      '12% ended, 12,345/100,000 done · ETA 3 h 12 min · running 10 · queued 3 · downloading 2 · failed 7 · credits 98,760 net · 10/10 per min',
    );
  });

  it('counts the saved outputs that wait to be published when they go to a bucket', () => {
    expect(liveLine(facts({ unpublished: 1234 }))).toContain('downloading 2 · to publish 1,234 · failed 7');
    expect(liveLine(facts({ unpublished: 0 }))).not.toContain('to publish');
  });

  it('fits 80 columns by dropping parts from the right, never the ETA', () => {
    const line = liveLine(facts(), 80);
    expect(line.length).toBeLessThan(80);
    expect(line).toMatch(/^12% ended, 12,345\/100,000 done · ETA 3 h 12 min · running 10/);
    expect(line).not.toMatch(/·\s*$/);
    // Very narrow: the percentage and the ETA.
    expect(liveLine(facts(), 30)).toBe('12% · ETA 3 h 12 min');
  });

  it('says until when, in local time, and how long, while it waits for the daily cap', () => {
    const f = facts({ waitingUntil: Date.parse('2026-11-23T13:12:00Z') });
    expect(liveLine(f, 80)).toContain(`waiting for the daily cap until ${localTime(f.waitingUntil!)} (in 3 h 12 min)`);
    expect(liveLine(f, 80)).not.toContain('ETA');
  });

  it('names the bucket as the wait while it answers nothing but faults, with since when and when it gives up, not the daily cap', () => {
    const since = Date.parse('2026-11-23T10:00:00Z');
    const f = facts({
      bucket: { since, givesUpAt: since + 30 * 60_000 },
      waitingUntil: Date.parse('2026-11-23T13:12:00Z'),
      unpublished: 35,
    });
    const line = liveLine(f);
    expect(line).toContain(
      `waiting for the bucket since ${localTime(since)} (gives up at ${localTime(since + 30 * 60_000)})`,
    );
    expect(line).not.toContain('daily cap');
    expect(line).toContain('to publish 35');
  });

  it('with several keys, ends with each key’s open items by the start of its fingerprint, the first part to give way', () => {
    const f = facts({
      keys: [
        { fingerprint: 'c8be2a2dc6a1', open: 10 },
        { fingerprint: '7a33a13c3f53', open: 0 },
      ],
    });
    expect(liveLine(f)).toMatch(/· 10\/10 per min · keys c8be2a 10, 7a33a1 0$/);
    expect(liveLine(f, 120)).not.toContain('keys');
  });
});

describe('the pace', () => {
  it('is said against the limit in its own terms, and a rehearsal says its time is scaled', () => {
    expect(liveLine(facts({ pace: { sent: 7, limit: 10, windowMs: 60_000, timeScale: 1 } }))).toContain(
      '· 7/10 per min',
    );
    const scaled = liveLine(facts({ pace: { sent: 10, limit: 10, windowMs: 60_000, timeScale: 60 } }));
    expect(scaled).toContain('· 10/10 per window (time x60)');
    expect(scaled).not.toMatch(/\/min/);
    expect(liveLine(facts({ pace: { sent: 50, limit: 50, windowMs: 30_000, timeScale: 1 } }))).toContain(
      '· 50/50 per 30 s',
    );
  });
});

describe('on a terminal', () => {
  it('redraws one line in place that never passes its width', async () => {
    const store = Store.open(join(mkdtempSync(join(tmpdir(), 'genbatch-progress-')), 's.sqlite'));
    try {
      store.itemSync.sync(
        Array.from({ length: 5 }, (_, i) => ({
          id: `a-very-long-item-id-${i}`,
          seq: i,
          type: 'image' as const,
          model: 'm',
          contentHash: 'h',
          spec: '{}',
          dependsOn: [],
        })),
        1,
        false,
      );
      const tty = terminal(40);
      const progress = new Progress(tty.out, liveView(store), 5);
      progress.start();
      progress.onEvent({ kind: 'waiting', reason: 'the daily credit cap', untilMs: Date.now() + 3_600_000 });
      await new Promise((r) => setTimeout(r, 300)); // a frame or two
      progress.stop();
      const frames = tty
        .written()
        .split('\r\x1b[2K')
        .map((f) => f.replace(/\n$/, ''))
        .filter(Boolean);
      expect(frames.length).toBeGreaterThan(1);
      for (const frame of frames.filter((f) => !f.startsWith('waiting for'))) expect(frame.length).toBeLessThan(40);
      expect(frames.at(-1)).toMatch(/^0% · waiting for the daily cap until/);
    } finally {
      store.close();
    }
  });
});

describe('on a terminal that reports no width', () => {
  it('draws the line as for 80 columns, not a lone ellipsis', async () => {
    const store = Store.open(join(mkdtempSync(join(tmpdir(), 'genbatch-progress-')), 's.sqlite'));
    try {
      const tty = terminal(0);
      const progress = new Progress(tty.out, liveView(store), 5, {
        pace: { limit: 10, windowMs: 1_000, timeScale: 60 },
      });
      progress.start();
      for (let i = 0; i < 3; i++)
        progress.onEvent({ kind: 'accepted', itemId: `i${i}`, attempt: 1, jobId: 'j', credits: 8 });
      progress.stop();
      const last = tty.written().split('\r\x1b[2K').at(-1)!.trim();
      expect(last).toMatch(/^0% ended, 0\/5 done · running 0 · credits 0 net · 3\/10 per window \(time x60\)$/);
      expect(last.length).toBeLessThan(80);
    } finally {
      store.close();
    }
  });
});

describe('off a terminal', () => {
  it('sets a reason that is a sentence of its own off with a dash, not a colon after its full stop', () => {
    const store = Store.open(join(mkdtempSync(join(tmpdir(), 'genbatch-progress-')), 's.sqlite'));
    try {
      const pipe = terminal(80);
      (pipe.out as { isTTY?: boolean }).isTTY = false;
      const progress = new Progress(pipe.out, liveView(store), 5);
      progress.onEvent({ kind: 'stopping', reason: 'interrupted. The state is saved; nothing is paid twice.' });
      progress.onEvent({ kind: 'stopping', reason: 'the budget is reached' });
      progress.stop();
      const lines = pipe.written().split('\n').filter(Boolean);
      expect(lines[0]).toMatch(/ stopping: interrupted\. The state is saved; nothing is paid twice\. — 0% ended/);
      expect(lines[1]).toMatch(/ stopping: the budget is reached: 0% ended/);
    } finally {
      store.close();
    }
  });

  it('prints a summary when the run starts and ends, not a line per item', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(t.sim, imageManifest(30));
    const res = await ws.run();
    expect(res.code, res.stdout).toBe(0);
    const progress = res.stderr.split('\n').filter(Boolean);
    expect(progress.length).toBeLessThanOrEqual(4);
    // Said at the run's first event, once the first submissions are on their way.
    expect(progress[0]).toMatch(/^\d\d:\d\d \S+ started: 0% ended, 0\/30 done · (ETA [^·]+ · )?running \d+/);
    expect(progress.at(-1)).toMatch(/ended: all 30 ended, 30 done · running 0 · credits \d+ net/);
    expect(res.stderr).not.toMatch(/item-\d+/);
  });
});

describe('under a real pseudo-terminal', () => {
  // util-linux's script(1) (essential on Debian) gives the CLI a pty 60 columns wide.
  const underPty = (dir: string, env: NodeJS.ProcessEnv) =>
    new Promise<string>((resolve, reject) => {
      const command = `stty cols 60; ${JSON.stringify(process.execPath)} ${JSON.stringify(CLI)} run m.yaml --simulate --max-retries 0`;
      execFile('script', ['-qec', command, '/dev/null'], { cwd: dir, env }, (error, stdout) =>
        error && error.code !== 1 ? reject(error) : resolve(stdout),
      );
    });

  it('redraws the live line in place within the width, coloured, and plain with NO_COLOR', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'genbatch-pty-'));
    writeFileSync(
      join(dir, 'm.yaml'),
      'version: 1\ndefaults: { model: studio-lite }\nitems:\n  - { id: a, prompt: "a mug" }\n  - { id: b, prompt: "a cup [sim:fail]" }\n',
    );
    const env = cleanEnv();
    delete env.NO_COLOR;
    const out = await underPty(dir, env);
    // At least the last frame, drawn when the run ends; more while it runs, however fast it is.
    const frames = out
      .split('\r\x1b[2K')
      .slice(1)
      .map((f) => f.split('\r')[0]!);
    expect(frames.length).toBeGreaterThan(0);
    const visible = (s: string) => s.replace(/\x1b\[[0-9;]*m/g, '');
    for (const frame of frames) {
      expect(visible(frame).length).toBeLessThan(60);
      expect(visible(frame)).toMatch(/^(\d+% ended, \d\/2 done|all 2 ended, \d done) · /);
    }
    expect(frames.at(-1)).toContain('\x1b[31mfailed 1\x1b[39m');
    expect(out).toContain('\x1b[31m, failed 1, rejected 0, blocked 0, skipped 0\x1b[39m');
    const plain = await underPty(dir, { ...env, NO_COLOR: '1' });
    expect(plain).toContain('\r\x1b[2K');
    expect(plain).not.toMatch(/\x1b\[\d+m/);
  });
});
