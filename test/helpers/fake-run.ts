import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import type { ApiClient, Job } from '../../src/api/index.js';
import { loadManifest } from '../../src/manifest/index.js';
import { Runner, type RunEvent } from '../../src/runner/index.js';
import { testOptions } from './run-options.js';
import { EventBus } from '../../src/util/event-bus.js';
import type { KeyLimits } from '../../src/scheduler/limits.js';
import { makePng } from '../../src/simulator/media.js';
import { Store } from '../../src/store/index.js';
import { FolderSink } from '../../src/sink/index.js';
import { Closing } from '../../src/util/closing.js';

/** The one job of a fake run, completed, with one output link. */
export const completedJob = {
  id: 'job_1',
  status: 'COMPLETED',
  outputs: [{ url: 'https://storage.test/1.png', downloadUrl: 'https://storage.test/1.png?sig=1' }],
  refunded: 0,
  charged: 2,
  raw: {},
} as unknown as Job;

/**
 * A one-item run (`only`, priced 2) in this process against a client of the
 * test's own: it reads the completed job and downloads its PNG unless the
 * test says otherwise. For what no simulator does (an answer that never comes).
 */
export async function fakeRun(
  client: Partial<Record<keyof ApiClient, unknown>>,
  limits: KeyLimits,
  options: { quietMs?: number; onEvent?: (event: RunEvent) => void } = {},
): Promise<{ runner: Runner; store: Store; done: Promise<Awaited<ReturnType<Runner['run']>>>; cleanUp: () => void }> {
  const dir = mkdtempSync(join(tmpdir(), 'genbatch-fake-run-'));
  writeFileSync(
    join(dir, 'm.yaml'),
    'version: 1\ndefaults: { model: studio-lite }\nprices: { studio-lite: 2 }\nitems:\n  - { id: only, prompt: "a mug" }\n',
  );
  const { loaded } = await loadManifest('m.yaml', dir);
  const fake = {
    answers: new EventBus(),
    // It keeps no requests under way: nothing of it is ever overdue, nothing to give up.
    overdueSince: () => undefined,
    abandonOverdue: () => 0,
    abandonSentBefore: () => 0,
    async getJob(): Promise<Job> {
      return completedJob;
    },
    async download() {
      const bytes = makePng('only');
      return { body: Readable.from([bytes]), contentLength: bytes.length, contentType: 'image/png', cancel() {} };
    },
    ...client,
  } as unknown as ApiClient;
  const store = Store.open(join(dir, 'state.sqlite'));
  const { onEvent, quietMs } = options;
  const closing = new Closing();
  const runner = new Runner({
    closing,
    options: testOptions({ downloadConcurrency: 2 }),
    keys: [{ fingerprint: 'fp-fake', client: fake, limits }],
    store,
    manifest: loaded!,
    catalog: undefined,
    toSync: { items: loaded!.items },
    outputs: new FolderSink(join(dir, 'out')),
    budget: undefined,
    tuning: { quietMs },
  });
  if (onEvent) runner.events.on(onEvent);
  return {
    runner,
    store,
    done: runner.run().finally(() => closing.close()),
    cleanUp: () => {
      store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
