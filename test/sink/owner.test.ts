import { describe, expect, it } from 'vitest';
import {
  claimOutputs,
  OutputsHeldError,
  OutputsTakenError,
  OwnerLostError,
  releaseClaim,
  renewClaim,
  type MarkerFile,
  type OutputsOwner,
} from '../../src/sink/index.js';
import { parseOwner } from '../../src/sink/owner.js';

/** A place's marker kept in memory. */
function place(): MarkerFile & { text: string | undefined; owner(): OutputsOwner | undefined } {
  return {
    text: undefined,
    async readMarker() {
      return this.text;
    },
    async writeMarker(text: string) {
      this.text = text;
    },
    owner() {
      return this.text === undefined ? undefined : parseOwner(this.text);
    },
  };
}

const A = { host: 'machine-a', pid: 100 };
const B = { host: 'machine-b', pid: 200 };
const LEASE = 120_000;
const manifest = { path: '/a/catalog.yaml', sha256: 'same-bytes' };
const ownerA: OutputsOwner = { state: '/a/.genbatch/ml.sqlite', runId: 'run-1', rehearsal: false, manifest };
/** The same manifest's bytes on machine B, at another path, with a state of its own. */
const ownerB: OutputsOwner = {
  state: '/b/.genbatch/ml.sqlite',
  runId: 'run-1',
  rehearsal: false,
  manifest: { path: '/b/catalog.yaml', sha256: 'same-bytes' },
};
const ask = (me: typeof A, now: number, more: Partial<Parameters<typeof claimOutputs>[3]> = {}) => ({
  me,
  now,
  leaseMs: LEASE,
  takeOver: false,
  fresh: true,
  // Each machine sees only its own disk.
  stateExists: (path: string) => path.startsWith(me === A ? '/a/' : '/b/'),
  alive: () => true,
  ...more,
});

describe('the owner marker and its lease', () => {
  it('claims a place no one holds, with a lease that names this process', async () => {
    const p = place();
    const claimed = await claimOutputs(p, 's3://catalog/ml', ownerA, ask(A, 1_000));
    expect(claimed).toMatchObject({ runId: 'run-1', notices: [] });
    expect(p.owner()).toMatchObject({ state: ownerA.state, holder: { ...A, since: 1_000, until: 1_000 + LEASE } });
  });

  it('refuses a second process while the holder lives, saying which host and since when; --take-over takes it', async () => {
    const p = place();
    await claimOutputs(p, 's3://catalog/ml', ownerA, ask(A, Date.UTC(2026, 10, 28, 12)));
    const now = Date.UTC(2026, 10, 28, 12, 1);
    const refused = claimOutputs(p, 's3://catalog/ml', ownerB, ask(B, now));
    await expect(refused).rejects.toThrow(OutputsHeldError);
    await expect(refused).rejects.toThrow(
      's3://catalog/ml is held by genbatch on machine-a (pid 100) since 2026-11-28 12:00:00 UTC; its lease runs until 2026-11-28 12:02:00 UTC',
    );
    expect(p.owner()?.holder?.host).toBe('machine-a');
    const taken = await claimOutputs(p, 's3://catalog/ml', ownerB, ask(B, now, { takeOver: true }));
    expect(taken.notices[0]).toMatch(/held by genbatch on machine-a \(pid 100\).*taken over \(--take-over\)/);
    expect(p.owner()?.holder).toMatchObject(B);
  });

  it('takes a lapsed lease over and says so; a killed holder on this machine is lapsed at once', async () => {
    const p = place();
    await claimOutputs(p, 's3://catalog/ml', ownerA, ask(A, 0));
    const lapsed = await claimOutputs(p, 's3://catalog/ml', ownerB, ask(B, LEASE + 1));
    expect(lapsed.notices[0]).toMatch(/its lease lapsed at .* so it is taken over/);
    // The same host, its process gone (killed): no need to wait for the lease.
    const sameHost = { host: 'machine-b', pid: 201 };
    const again = await claimOutputs(p, 's3://catalog/ml', ownerB, ask(sameHost, LEASE + 2, { alive: () => false }));
    expect(again.notices[0]).toMatch(/that process is gone, so it is taken over/);
  });

  it("a lease this state's own run could not give up (an interrupt, the place silent) is its own, wherever that ran", async () => {
    const p = place();
    const left = await claimOutputs(p, 's3://catalog/ml', ownerA, ask(A, 0));
    // The same state (its disk moved to another container: another host name, another pid), well inside the lease.
    const moved = { host: 'machine-a2', pid: 7 };
    await expect(claimOutputs(p, 's3://catalog/ml', ownerA, ask(moved, 1_000))).rejects.toThrow(OutputsHeldError);
    const again = await claimOutputs(p, 's3://catalog/ml', ownerA, ask(moved, 1_000, { leftBy: left.holder }));
    expect(again.notices[0]).toMatch(/this state's own run left it when it ended .* so it is taken over/);
    expect(p.owner()?.holder).toMatchObject(moved);
    // Another holder than the one it left is not taken for it.
    const other = await claimOutputs(p, 's3://catalog/ml', ownerB, ask(B, 2_000, { takeOver: true }));
    await expect(
      claimOutputs(p, 's3://catalog/ml', ownerA, ask(moved, 3_000, { leftBy: left.holder })),
    ).rejects.toThrow(OutputsHeldError);
    expect(other.holder.host).toBe('machine-b');
  });

  it('a lease given up at the end lets the next run in at once, and says nothing of it', async () => {
    const p = place();
    const claimed = await claimOutputs(p, 's3://catalog/ml', ownerA, ask(A, 0));
    await releaseClaim(p, claimed.holder);
    expect(p.owner()?.holder?.until).toBe(0);
    expect((await claimOutputs(p, 's3://catalog/ml', ownerB, ask(B, 10))).notices).toEqual([]);
  });

  it('renews while it holds the place; once another took it over, the renewal says so', async () => {
    const p = place();
    const claimed = await claimOutputs(p, 's3://catalog/ml', ownerA, ask(A, 0));
    const renewed = await renewClaim(p, 's3://catalog/ml', claimed.holder, 30_000, LEASE);
    expect(renewed.until).toBe(30_000 + LEASE);
    await claimOutputs(p, 's3://catalog/ml', ownerB, ask(B, 200_000));
    await expect(renewClaim(p, 's3://catalog/ml', renewed, 210_000, LEASE)).rejects.toThrow(OwnerLostError);
    await expect(renewClaim(p, 's3://catalog/ml', renewed, 210_000, LEASE)).rejects.toThrow(
      /taken over by genbatch on machine-b/,
    );
  });

  it("a fresh state takes the run's identity the place records, when the manifest is the same and its state is elsewhere", async () => {
    const p = place();
    await claimOutputs(p, 's3://catalog/ml', { ...ownerA, runId: 'recorded-by-an-earlier-version' }, ask(A, 0));
    const claimed = await claimOutputs(p, 's3://catalog/ml', ownerB, ask(B, LEASE + 1));
    expect(claimed.runId).toBe('recorded-by-an-earlier-version');
    expect(claimed.notices.join('\n')).toMatch(/from a state not on this machine .* resending its keys/);
    expect(p.owner()?.runId).toBe('recorded-by-an-earlier-version');
  });

  it('never shares a place silently: another manifest, or a state that sent keys of its own, is refused naming the holder', async () => {
    const p = place();
    await claimOutputs(p, 's3://catalog/ml', { ...ownerA, runId: 'run-0' }, ask(A, 0));
    const other = { ...ownerB, manifest: { path: '/b/other.yaml', sha256: 'other-bytes' } };
    await expect(claimOutputs(p, 's3://catalog/ml', other, ask(B, LEASE + 1))).rejects.toThrow(OutputsTakenError);
    await expect(claimOutputs(p, 's3://catalog/ml', other, ask(B, LEASE + 1))).rejects.toThrow(
      /holds the outputs of the run whose state is \/a\/.genbatch\/ml.sqlite \(manifest \/a\/catalog.yaml\)/,
    );
    await expect(claimOutputs(p, 's3://catalog/ml', ownerB, ask(B, LEASE + 1, { fresh: false }))).rejects.toThrow(
      OutputsTakenError,
    );
    // The same run (same name and destination) from a changed manifest goes on, and that is said.
    const changed = { ...other, runId: 'run-0' };
    const claimed = await claimOutputs(p, 's3://catalog/ml', changed, ask(B, LEASE + 1));
    expect(claimed.notices.join('\n')).toMatch(
      /made from \/a\/catalog.yaml; this manifest \(\/b\/other.yaml\) differs/,
    );
  });
});
