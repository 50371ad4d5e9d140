import { readFileSync } from 'node:fs';
import { request } from 'node:http';
import { join, resolve } from 'node:path';
import { parse } from 'yaml';
import { describe, expect, it, onTestFinished } from 'vitest';
import { StateMetrics } from '../../src/metrics/registry.js';
import { readSnapshot } from '../../src/metrics/snapshot.js';
import { startMetricsServer } from '../../src/metrics/server.js';
import { exitCodeWithin, startCli } from '../helpers/cli.js';
import { imageManifest, readState, workspace } from '../helpers/run.js';
import { startTestSim } from '../helpers/sim.js';

const TIME_SCALE = 600;

/** A scrape's samples: `name{labels}` → value (the text format's lines, comments left out). */
function samples(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    out.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return out;
}

/** The sum of the samples of one metric (over its labels), or of those whose labels hold `having`. */
function total(s: Map<string, number>, metric: string, having = ''): number {
  let sum = 0;
  for (const [name, value] of s)
    if ((name === metric || name.startsWith(`${metric}{`)) && name.includes(having)) sum += value;
  return sum;
}

function get(
  url: string,
  headers: Record<string, string> = {},
  method = 'GET',
): Promise<{ status: number; body: string; type: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method, headers }, (res) => {
      let body = '';
      res.on('data', (d) => {
        body += d;
      });
      res.on('end', () => resolve({ status: res.statusCode!, body, type: String(res.headers['content-type']) }));
    });
    req.on('error', reject);
    req.end();
  });
}

async function serve(statePath: string) {
  const server = await startMetricsServer({ statePath });
  onTestFinished(() => server.close());
  const scrape = async () => {
    const res = await get(`http://127.0.0.1:${server.port}/metrics`, { authorization: `Bearer ${server.token}` });
    expect(res.status).toBe(200);
    return samples(res.body);
  };
  return { server, scrape };
}

describe('genbatch metrics', () => {
  it('counts what the service saw: items, credits per key, submissions and 429s, job durations, downloads, across two runs', async () => {
    // A key whose /me hides its limits, run with four times its concurrency: the service answers 429 to some.
    // Its jobs last 0.5-0.75 s, so the sixth submission meets five still running however loaded the machine is.
    const t = await startTestSim({
      timeScale: TIME_SCALE,
      imageSeconds: [300, 450],
      meShowsLimits: false,
      limits: { imagesInFlight: 5 },
    });
    const ws = workspace(t.sim, imageManifest(12), {}, TIME_SCALE);
    const { scrape } = await serve(ws.statePath);
    expect(total(await scrape(), 'genbatch_state_present')).toBe(0);
    const first = await ws.run(['--max-images-in-flight', '20', '--submit-rate', '40/1s', '--max-credits', '15']);
    expect(first.code).toBe(3);
    const between = await scrape();
    const second = await ws.run(['--max-images-in-flight', '20', '--submit-rate', '40/1s']);
    expect(second.code).toBe(0);
    const after = await scrape();

    const requests = t.sim.service.ledger.of('request');
    const posts = requests.filter((r) => r.method === 'POST' && /^\/(images|videos)/.test(r.path));
    const limited = requests.filter((r) => r.status === 429);
    expect(limited.length, 'the service refused some submissions with 429').toBeGreaterThan(0);
    const charged = t.sim.service.ledger.of('charge').reduce((n, c) => n + c.credits, 0);
    const state = readState(ws.statePath);

    expect(after.get('genbatch_items{state="done"}')).toBe(12);
    expect(total(after, 'genbatch_credits_charged_total')).toBe(charged);
    expect(total(between, 'genbatch_credits_charged_total')).toBeLessThan(charged);
    expect(total(after, 'genbatch_submissions_total')).toBe(posts.length);
    expect(total(after, 'genbatch_rate_limited_total')).toBe(limited.length);
    for (const code of new Set(limited.map((r) => r.code)))
      expect(total(after, 'genbatch_rate_limited_total', `code="${code}"`)).toBe(
        limited.filter((r) => r.code === code).length,
      );
    expect(after.get('genbatch_job_duration_seconds_count{type="image"}')).toBe(12);
    expect(after.get('genbatch_downloads_total')).toBe(12);
    expect(after.get('genbatch_download_bytes_total')).toBe(state.outputs.reduce((n, o) => n + o.bytes, 0));
    expect(after.get('genbatch_run_active')).toBe(0);
    // Only fingerprints name a key.
    expect([...after.keys()].join('\n')).not.toContain(t.sim.apiKey);
  });

  it('counts the items waiting for a decision on their gates, as the state it is', async () => {
    const t = await startTestSim({ timeScale: TIME_SCALE });
    const gated = `${imageManifest(2)}  - { id: final-0, prompt: "final", approved: [item-0] }\n  - { id: final-1, prompt: "final", approved: [item-1] }\n`;
    const ws = workspace(t.sim, gated, {}, TIME_SCALE);
    const { scrape } = await serve(ws.statePath);
    expect((await ws.run()).code).toBe(1);
    const seen = await scrape();
    expect(seen.get('genbatch_items{state="waiting"}')).toBe(2);
    expect(seen.get('genbatch_items{state="done"}')).toBe(2);
  });

  it('answers only with its token, at its own address, and only /metrics', async () => {
    const t = await startTestSim({ timeScale: TIME_SCALE });
    const ws = workspace(t.sim, imageManifest(2), {}, TIME_SCALE);
    expect((await ws.run()).code).toBe(0);
    const { server } = await serve(ws.statePath);
    const base = `http://127.0.0.1:${server.port}`;
    expect((await get(`${base}/metrics`)).status).toBe(403);
    expect((await get(`${base}/metrics`, { authorization: 'Bearer not-the-token' })).status).toBe(403);
    expect((await get(server.url, { host: `evil.example:${server.port}` })).status).toBe(403);
    const ok = await get(server.url);
    expect(ok.status).toBe(200);
    expect(ok.type).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(ok.body).toContain('# TYPE genbatch_credits_charged_total counter');
    expect((await get(`${base}/?token=${server.token}`)).status).toBe(404);
    expect((await get(`${base}/../state.sqlite?token=${server.token}`)).status).toBe(404);
    expect((await get(server.url, {}, 'POST')).status).toBe(405);
  });

  it('the command serves a state that does not exist yet, prints where (--json), and stops on Ctrl-C', async () => {
    const t = await startTestSim({ timeScale: TIME_SCALE });
    const ws = workspace(t.sim, imageManifest(2), {}, TIME_SCALE);
    const cli = startCli(['metrics', 'm.yaml', '--json'], ws.env, ws.dir);
    const [, url] = await cli.waitFor(/"url": "([^"]+)"/);
    const scraped = await get(url!);
    expect(samples(scraped.body).get('genbatch_state_present')).toBe(0);
    expect((await ws.run()).code).toBe(0);
    const later = samples((await get(url!)).body);
    expect(later.get('genbatch_state_present')).toBe(1);
    expect(later.get('genbatch_items{state="done"}')).toBe(2);
    cli.child.kill('SIGINT');
    expect(await exitCodeWithin(cli, 10_000)).toBe(0);
  });

  it("docs' dashboard asks only for metrics that are served, and the scrape config sends the token as a bearer", async () => {
    const docs = resolve(import.meta.dirname, '../../docs/grafana');
    const metrics = new StateMetrics();
    metrics.fill(readSnapshot(join(docs, 'no-such.sqlite'), Date.now()));
    const served = new Set([...(await metrics.registry.metrics()).matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => m[1]));
    const dashboard = JSON.parse(readFileSync(join(docs, 'genbatch-dashboard.json'), 'utf8'));
    const exprs: string[] = dashboard.panels.flatMap((p: { targets: { expr: string }[] }) =>
      p.targets.map((t) => t.expr),
    );
    const asked = new Set(exprs.flatMap((e) => [...e.matchAll(/\bgenbatch_\w+/g)].map((m) => m[0])));
    expect(asked.size).toBeGreaterThan(10);
    for (const name of asked) expect(served.has(name.replace(/_(bucket|sum|count)$/, '')), name).toBe(true);
    const scrape = parse(readFileSync(join(docs, 'prometheus.yml'), 'utf8')).scrape_configs[0];
    expect(scrape).toMatchObject({ metrics_path: '/metrics', authorization: { type: 'Bearer' } });
  });
});
