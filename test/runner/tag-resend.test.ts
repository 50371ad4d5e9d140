import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Store } from '../../src/store/index.js';
import { exitCodeWithin } from '../helpers/cli.js';
import { expectNoDoubleChargeAndVerifiedOutputs, readState, workspace } from '../helpers/run.js';
import { startTestSim } from '../helpers/sim.js';

const manifest = (budget: number) => `version: 1
defaults: { model: studio-lite, tags: [t] }
budget: { perTag: { t: ${budget} } }
items:
  - { id: a, prompt: "first" }
  - { id: b, prompt: "second" }
  - { id: c, prompt: "third" }
`;

describe('a tag budget and a resend', () => {
  it('a resend due while its tag is spent ends the run (exit 3), its attempt kept for a later run', {
    timeout: 40_000,
  }, async () => {
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(t.sim, manifest(100));
    expect((await ws.run()).code).toBe(0);
    // a's second attempt was sent and its answer lost: a resend waits for its time, as a killed run leaves it.
    const first = readState(ws.statePath).attempts.find((x) => x.item_id === 'a')! as { body?: string };
    const key = randomUUID();
    const store = Store.open(ws.statePath);
    const now = Date.now();
    store.lifecycle.redoChanged('a', now);
    store.lifecycle.startAttempt('a', 2, key, first.body!, now, store.attempts.keyOf('a', 1)!);
    store.lifecycle.recordSent('a', 2, now, store.attempts.keyOf('a', 1)!);
    store.lifecycle.deferResend('a', 2, now + 1, now);
    store.close();
    // t has 6 charged now, and a budget of 4.
    writeFileSync(join(ws.dir, 'm.yaml'), manifest(4));
    const run = ws.start();
    expect(await exitCodeWithin(run, 20_000), run.output()).toBe(3);
    expect(run.output()).toMatch(/the budget of tag t \(4 credits\) is reached[^\n]*1 of its items was not sent/);
    // Held back, not resent: a's second attempt waits, its key kept; nothing was charged in this run.
    expect(t.sim.service.ledger.of('charge')).toHaveLength(3);
    const held = readState(ws.statePath);
    expect(held.items.find((i) => i.id === 'a')).toMatchObject({ state: 'maybe_accepted', error_code: 'TAG_BUDGET' });
    // With room in the budget, the next run resends it with that same key.
    writeFileSync(join(ws.dir, 'm.yaml'), manifest(8));
    const again = await ws.run();
    expect(again.code, again.stdout + again.stderr).toBe(0);
    const charges = t.sim.service.ledger.of('charge');
    expect(charges).toHaveLength(4);
    expect(charges.at(-1)!.idempotencyKey).toBe(key);
    expectNoDoubleChargeAndVerifiedOutputs(t.sim, ws);
  });
});
