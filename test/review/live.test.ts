import { mkdtempSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished, vi } from 'vitest';
import { LiveFeed } from '../../src/review/live.js';
import { Store } from '../../src/store/index.js';

/** A run's store with two items whose jobs completed: their outputs' names are claimed in the order a, b. */
function runStore(path: string): Store {
  const store = Store.open(path);
  const items = ['a', 'b'].map((id, seq) => ({
    id,
    seq,
    type: 'image' as const,
    model: 'm',
    contentHash: id,
    spec: '{}',
    dependsOn: [],
  }));
  store.itemSync.sync(items, 1, false);
  for (const id of ['a', 'b']) {
    store.lifecycle.startAttempt(id, 1, `k-${id}`, '{}', 1, 'fp');
    store.lifecycle.recordSent(id, 1, 1, 'fp');
    store.lifecycle.recordAccepted(id, 1, `job-${id}`, 2, 0, 1);
    store.lifecycle.recordEnded(id, 1, { jobId: `job-${id}`, status: 'completed', refunded: 0, refundDay: 0 }, 1);
    store.outputFiles.claimPath(`job-${id}`, 1, id, `${id}-1.png`, 1, 1);
  }
  return store;
}

const saved = (store: Store, id: string) =>
  store.lifecycle.outputSaved(
    id,
    `job-${id}`,
    1,
    { path: `${id}-1.png`, bytes: 1, sha256: 'x', contentType: 'image/png', mtimeMs: 1 },
    Date.now(),
    true,
  );

/** A run's store and a live feed on it (a look every 10 ms) with one page attached: what the page was sent. */
function attachedFeed(summary: () => unknown = () => ({})) {
  const path = join(mkdtempSync(join(tmpdir(), 'genbatch-live-')), 'state.sqlite');
  const run = runStore(path);
  const reader = Store.openForReview(path);
  const feed = new LiveFeed({ store: () => reader, summary: summary as never, series: () => ({}) as never }, 10);
  onTestFinished(() => {
    feed.close();
    reader.close();
    run.close();
  });
  const writes: string[] = [];
  const res = { writeHead: () => res, write: (text: string) => writes.push(text), on: () => res, end: () => {} };
  feed.attach(res as unknown as ServerResponse);
  return { run, writes };
}

describe('the live feed', () => {
  it('sends every output once, even when one claimed earlier is verified later', async () => {
    const { run, writes } = attachedFeed();
    const sentIds = () =>
      writes
        .filter((w) => w.startsWith('event: outputs'))
        .flatMap((w) => JSON.parse(w.split('data: ')[1]!) as { itemId: string }[])
        .map((o) => o.itemId);

    // b's bytes arrive first, though a's name was claimed first (its row has the smaller rowid).
    saved(run, 'b');
    await vi.waitFor(() => expect(sentIds()).toEqual(['b']));
    saved(run, 'a');
    await vi.waitFor(() => expect(sentIds()).toEqual(['b', 'a']));
    // Nothing is sent twice: once the feed has looked at a later commit (it sent its summary), still b, a.
    const looks = () => writes.filter((w) => w.startsWith('event: summary')).length;
    const before = looks();
    saved(run, 'a');
    await vi.waitFor(() => expect(looks()).toBeGreaterThan(before));
    expect(sentIds()).toEqual(['b', 'a']);
  });

  it('sends an opened page the summary and the plots once, and again only once the state changes', () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'Date'] });
    onTestFinished(() => {
      vi.useRealTimers();
    });
    let summaries = 0;
    const { run, writes } = attachedFeed(() => ({ n: ++summaries }));
    const sent = (name: string) => writes.filter((w) => w.startsWith(`event: ${name}`)).length;
    // Looks with nothing committed send nothing more: a page redrew its header and plots, and asked again
    // for its cards, a look after it opened.
    vi.advanceTimersByTime(5_000);
    expect([sent('summary'), sent('series'), summaries]).toEqual([1, 1, 1]);
    saved(run, 'a');
    vi.advanceTimersByTime(5_000);
    expect([sent('summary'), sent('series'), sent('outputs')]).toEqual([2, 2, 1]);
  });
});
