// genbatch metrics over a 100,000-item state: how long one scrape takes, each one reading the state afresh.
// Goal: a scrape under 200 ms, so a 15 s scrape interval costs the machine next to nothing.
import { mkdtempSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startMetricsServer } from '../dist/metrics/server.js';
import { Store } from '../dist/store/index.js';
import { fmt } from './measure.mjs';
import { buildCatalogState } from './state.mjs';

const ITEMS = 100_000;
const SCRAPES = 20;
const GOAL_MS = 200;

function get(url) {
  return new Promise((resolve, reject) => {
    request(url, (res) => {
      let body = '';
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode, body }));
    })
      .on('error', reject)
      .end();
  });
}

export async function metricsBench() {
  const state = join(mkdtempSync(join(tmpdir(), 'genbatch-bench-metrics-')), 'big.sqlite');
  buildCatalogState(state, { items: ITEMS, tagged: true });
  // The counts a long run leaves: submissions, 429s of each code, failures, seconds of outages.
  const store = Store.open(state);
  store.counters.add([
    { name: 'submissions', keyFp: 'fp-bench', label: '', value: ITEMS + 312 },
    { name: 'rate_limited', keyFp: 'fp-bench', label: 'RATE_LIMITED', value: 41 },
    { name: 'rate_limited', keyFp: 'fp-bench', label: 'CONCURRENCY_LIMIT', value: 7 },
    { name: 'download_failures', keyFp: '', label: 'LINK_EXPIRED', value: 12 },
    { name: 'outage_seconds', keyFp: '', label: '', value: 95.5 },
  ]);
  store.close();
  const server = await startMetricsServer({ statePath: state });
  try {
    const times = [];
    let body = '';
    for (let i = 0; i < SCRAPES; i++) {
      const started = performance.now();
      const res = await get(server.url);
      times.push(performance.now() - started);
      if (res.status !== 200) throw new Error(`scrape answered ${res.status}: ${res.body}`);
      body = res.body;
    }
    const done = /genbatch_items\{state="done"\} (\d+)/.exec(body)?.[1];
    const first = times[0];
    times.sort((a, b) => a - b);
    const median = times[Math.floor(times.length / 2)];
    const worst = times.at(-1);
    const pass = worst < GOAL_MS;
    console.log(
      `metrics ${ITEMS.toLocaleString('en-US')} items (${done} done, 2 tags each), ${SCRAPES} scrapes: first ${fmt(first, 0)} ms, median ${fmt(median, 0)} ms, slowest ${fmt(worst, 0)} ms, ${fmt(body.length / 1024, 1)} KB (goal < ${GOAL_MS} ms): ${pass ? 'met' : 'MISSED'}`,
    );
    return pass;
  } finally {
    await server.close();
  }
}
