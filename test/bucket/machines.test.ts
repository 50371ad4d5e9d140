import { DEFAULT_PATIENCE } from '../../src/options/flags.js';
import { rmSync } from 'node:fs';
import { hostname } from 'node:os';
import { describe, expect, it, vi } from 'vitest';
import { openSqlite } from '../../src/store/driver.js';
import { S3BucketClient } from '../../src/sink/bucket/s3-bucket-client.js';
import { openOutputSink } from '../../src/sink/index.js';
import { raw, startTestReview } from '../helpers/review.js';
import { parseOwner } from '../../src/sink/owner.js';
import { exitCodeWithin, runCliInProcess, startCli } from '../helpers/cli.js';
import { imageManifest, readState, workspace } from '../helpers/run.js';
import { startTestBucket } from '../helpers/s3.js';
import { startTestSim } from '../helpers/sim.js';

async function textOf(body: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of body) chunks.push(Buffer.from(c as Buffer));
  return Buffer.concat(chunks).toString('utf8');
}

const OUT = ['--out', 's3://catalog/ml'];

// Two machines are two folders with no shared disk: the same manifest's bytes checked out at two paths, each with
// its own state (B has none at first). The bucket is all they share.
describe('a run outlives the machine it started on', () => {
  it('machine A killed and its disk lost: B, with the same manifest elsewhere and no state, finishes with every item paid once', {
    timeout: 90_000,
  }, async () => {
    const t = await startTestSim({ timeScale: 600 });
    const s3 = await startTestBucket();
    const manifest = imageManifest(30);
    const a = workspace(t.sim, manifest);
    const b = workspace(t.sim, manifest);
    const env = { ...a.env, ...s3.env };
    const machineA = startCli(a.args(OUT), env, a.dir);
    let published = 0;
    s3.onCreated((key) => {
      if (key.endsWith('.png') && ++published === 12) machineA.child.kill('SIGKILL');
    });
    await exitCodeWithin(machineA, 60_000);
    expect(machineA.child.signalCode).toBe('SIGKILL');
    const paidOnA = t.sim.service.ledger.of('charge').length;
    expect(paidOnA).toBeGreaterThanOrEqual(12);
    rmSync(a.dir, { recursive: true, force: true });

    const onB = await runCliInProcess(b.args(OUT), env, b.dir);
    expect(onB.code, onB.stdout + onB.stderr).toBe(0);
    // A's lease named a process of this host that is gone: taken over at once, and said.
    expect(onB.stderr).toMatch(
      /s3:\/\/catalog\/ml was held by genbatch on .* that process is gone, so it is taken over/,
    );
    const charges = t.sim.service.ledger.of('charge');
    expect(charges).toHaveLength(30);
    expect(new Set(charges.map((c) => c.jobId)).size).toBe(30);
    const pngs = s3.created.filter((k) => k.endsWith('.png'));
    expect(new Set(pngs).size).toBe(30);
    expect(readState(b.statePath).outputs.filter((o) => o.published_to)).toHaveLength(30);
  });

  it('a second live process on the same place is refused (exit 4, nothing sent) while the first holds its lease', {
    timeout: 90_000,
  }, async () => {
    // Slow enough that A is still running when B starts.
    const t = await startTestSim({ timeScale: 60 });
    const s3 = await startTestBucket();
    const manifest = imageManifest(40);
    const a = workspace(t.sim, manifest, {}, 60);
    const b = workspace(t.sim, manifest, {}, 60);
    const env = { ...a.env, ...s3.env };
    const bucket = new S3BucketClient({ bucket: 'catalog', idleTimeoutMs: 5_000, env: s3.env });
    const machineA = startCli(a.args(OUT), env, a.dir);
    try {
      const held = await vi.waitFor(
        async () => {
          const got = await bucket.get('ml/.genbatch-outputs.json');
          const owner = got && parseOwner(await textOf(got.body));
          expect(owner?.holder?.pid).toBe(machineA.child.pid);
          return owner!.holder!;
        },
        { timeout: 30_000, interval: 100 },
      );
      const refused = await runCliInProcess(b.args(OUT), env, b.dir);
      expect(refused.code, refused.stdout + refused.stderr).toBe(4);
      expect(refused.stderr).toContain(`s3://catalog/ml is held by genbatch on ${hostname()} (pid ${held.pid}) since `);
      expect(refused.stderr).toMatch(/Nothing was submitted\. If that machine is gone, .* or now with --take-over\./);
      expect(readState(b.statePath).attempts).toHaveLength(0);
    } finally {
      machineA.child.kill('SIGKILL');
      await exitCodeWithin(machineA, 10_000);
    }
  });

  it("A's state comes back on B from beside the outputs: its review decisions, its attempts; nothing is paid again", {
    timeout: 90_000,
  }, async () => {
    const t = await startTestSim({ timeScale: 600 });
    const s3 = await startTestBucket();
    const manifest = imageManifest(6);
    const a = workspace(t.sim, manifest);
    const b = workspace(t.sim, manifest);
    const env = { ...a.env, ...s3.env };
    const onA = await runCliInProcess(a.args(OUT), env, a.dir);
    expect(onA.code, onA.stdout + onA.stderr).toBe(0);
    // A reviewer on A, after the run: the decision goes to the bucket in the state's snapshot when the app stops.
    const review = await startTestReview({
      statePath: a.statePath,
      outputs: await openOutputSink('s3://catalog/ml', {
        statePath: a.statePath,
        env: s3.env,
        patience: DEFAULT_PATIENCE,
      }),
      title: 'm',
      budget: null,
    });
    const decision = JSON.stringify({ itemId: 'item-2', version: 1, decision: 'rejected', note: 'wrong colour' });
    const headers = { 'content-type': 'application/json', 'x-genbatch-token': review.token };
    expect((await raw(review.base, 'POST', '/api/review', headers, decision)).status).toBe(200);
    await review.close();
    const attemptsOnA = readState(a.statePath).attempts.length;
    rmSync(a.dir, { recursive: true, force: true });

    const onB = await runCliInProcess(b.args(OUT), env, b.dir);
    expect(onB.code, onB.stdout + onB.stderr).toBe(0);
    expect(onB.stderr).toMatch(
      /no state was here: restored it from s3:\/\/catalog\/ml\/\.genbatch\/state\/m\/\d+-\w+\.sqlite\.gz \(taken /,
    );
    expect(t.sim.service.ledger.of('charge')).toHaveLength(6);
    expect(readState(b.statePath).attempts).toHaveLength(attemptsOnA);
    const db = openSqlite(b.statePath, { readonly: true });
    try {
      expect(db.prepare("SELECT decision, note FROM reviews WHERE item_id = 'item-2'").get()).toEqual({
        decision: 'rejected',
        note: 'wrong colour',
      });
    } finally {
      db.close();
    }
  });
});
