import { describe, expect, it } from 'vitest';
import type { ApiClient, Job } from '../../src/api/index.js';
import { expectNoDoubleChargeAndVerifiedOutputs, imageManifest, readState, workspace } from '../helpers/run.js';
import { startTestSim } from '../helpers/sim.js';
import { runInProcess } from '../helpers/in-process.js';

describe('an error no policy foresaw (a bug of ours, or an answer of a shape nobody expected)', () => {
  it('never ends a paid job: the item keeps its state with the error noted, the others finish, and a rerun fetches it without paying again', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(t.sim, imageManifest(3));
    let broken: string | undefined;
    // The first completed job reads back with no outputs list at all: the download code throws a TypeError.
    const client = new Proxy(t.client, {
      get(target, prop, receiver) {
        if (prop !== 'getJob') return Reflect.get(target, prop, receiver);
        return async (...args: Parameters<ApiClient['getJob']>) => {
          const job = await target.getJob(...args);
          if (job.status !== 'COMPLETED' || (broken && broken !== job.id)) return job;
          broken = job.id;
          return { ...job, outputs: undefined } as unknown as Job;
        };
      },
    });
    const first = await runInProcess(t, ws, { client });
    expect(first.counts).toMatchObject({ done: 2, downloading: 1 });
    const item = readState(ws.statePath).items.find((i) => i.state === 'downloading')!;
    expect(item).toMatchObject({ error_code: 'INTERNAL' });
    expect(item.error_message).toMatch(/^unexpected error: /);
    const second = await runInProcess(t, ws);
    expect(second.counts).toMatchObject({ done: 3 });
    expect(t.sim.service.ledger.of('charge')).toHaveLength(3);
    expectNoDoubleChargeAndVerifiedOutputs(t.sim, ws);
  });
});
