import { GenbatchError } from '../util/errors.js';
import type { OutputsHolder, OutputsOwner } from './sink.js';

/** The file, at the top of a place that holds outputs, that names the run whose outputs they are and who holds it now. */
export const OWNER_FILE = '.genbatch-outputs.json';

/** How long a claim lives without its owner renewing it: a killed owner blocks the next run no longer than this. */
export const LEASE_MS = 120_000;

/** The place holds another run's outputs: nothing is written there (exit 2: another --out). */
export class OutputsTakenError extends GenbatchError {}

/** A live process holds the place (its lease has not lapsed): nothing is sent (exit 4: the environment). */
export class OutputsHeldError extends GenbatchError {}

/** Another process took the place over while this run held it (its lease lapsed): this run sends nothing more. */
export class OwnerLostError extends GenbatchError {}

/** What a place's marker is read and written through: the sink's own file at its top. */
export interface MarkerFile {
  readMarker(): Promise<string | undefined>;
  writeMarker(text: string): Promise<void>;
}

/** The marker's text, as written. */
export function ownerText(owner: OutputsOwner): string {
  return `${JSON.stringify({ ...owner, note: 'genbatch: the run whose outputs this place holds, and who holds it now' }, null, 2)}\n`;
}

/** The owner a marker names; none when it names no one (a marker cut short by a crash is written anew). */
export function parseOwner(text: string): OutputsOwner | undefined {
  try {
    const v = JSON.parse(text) as Partial<OutputsOwner>;
    if (typeof v.state !== 'string' || typeof v.runId !== 'string') return undefined;
    const m = v.manifest;
    const h = v.holder;
    return {
      state: v.state,
      runId: v.runId,
      rehearsal: v.rehearsal === true,
      ...(m && typeof m.path === 'string' && typeof m.sha256 === 'string'
        ? { manifest: { path: m.path, sha256: m.sha256 } }
        : {}),
      ...(h && typeof h.host === 'string' && [h.pid, h.since, h.until].every((n) => typeof n === 'number')
        ? { holder: { host: h.host, pid: h.pid, since: h.since, until: h.until } }
        : {}),
    };
  } catch {
    // A marker cut short by a crash names no one.
    return undefined;
  }
}

/** What a claim asks, beside the owner it writes. */
export interface ClaimAsk {
  /** This process: who the lease names. */
  me: { host: string; pid: number };
  now: number;
  leaseMs: number;
  /** --take-over: an operator says the holder is gone, whatever its lease says. */
  takeOver: boolean;
  /** This state has sent no key yet: it may take the run's identity the marker records (a lost state, a new machine). */
  fresh: boolean;
  /** Whether the state a marker names is on this machine. */
  stateExists(path: string): boolean;
  /** Whether a process of this machine still runs (a holder on this host whose process is gone has lapsed). */
  alive(pid: number): boolean;
  /** The holder this state's own last run left unreleased (its place did not answer at its end): gone, wherever it ran. */
  leftBy?: OutputsHolder | undefined;
}

/** A claim made: the run's identity (the marker's, when a fresh state takes it), and what to say of it. */
export interface Claimed {
  runId: string;
  holder: OutputsHolder;
  /** Said and logged: a lapsed holder taken over, a run taken over from another manifest. */
  notices: string[];
}

const when = (at: number) =>
  new Date(at)
    .toISOString()
    .replace('T', ' ')
    .replace(/\.\d+Z$/, ' UTC');

/**
 * Claims the place for `owner`, with a lease: the same run (its identity, and
 * its state here or gone from this machine) goes on; a live holder refuses it
 * (OutputsHeldError); a lapsed one is taken over, and that is said. A state
 * that has sent nothing takes the identity the marker records, when the
 * marker's state is not here and the manifest is the same (its path or its
 * bytes): the run goes on where the lost state left it, with the same keys.
 */
export async function claimOutputs(
  file: MarkerFile,
  where: string,
  owner: OutputsOwner,
  ask: ClaimAsk,
): Promise<Claimed> {
  const text = await file.readMarker();
  const current = text === undefined ? undefined : parseOwner(text);
  const notices: string[] = [];
  let runId = owner.runId;
  if (current) {
    // A live holder is said first: whatever its run, this one waits for it (or takes over from a machine known gone).
    const held = current.holder;
    if (held && !isMe(held, ask.me) && held.until > ask.now) {
      const own = ask.leftBy !== undefined && sameHolder(held, ask.leftBy);
      const lapsed = own || (held.host === ask.me.host && !ask.alive(held.pid));
      if (!lapsed && !ask.takeOver) throw heldError(where, held);
      const why = own
        ? "this state's own run left it when it ended (the place did not answer then), so it is taken over"
        : ask.takeOver
          ? 'taken over (--take-over)'
          : 'that process is gone, so it is taken over';
      notices.push(
        `${where} was held by genbatch on ${held.host} (pid ${held.pid}) since ${when(held.since)}, until ${when(held.until)}: ${why}`,
      );
    } else if (held && !isMe(held, ask.me) && held.until > 0) {
      notices.push(
        `${where} was held by genbatch on ${held.host} (pid ${held.pid}) since ${when(held.since)}; its lease lapsed at ${when(held.until)}, so it is taken over`,
      );
    }
    runId = sameRun(where, current, owner, ask, notices);
  }
  const holder = { ...ask.me, since: ask.now, until: ask.now + ask.leaseMs };
  await file.writeMarker(ownerText({ ...owner, runId, holder }));
  // Two processes that claimed at once: the one whose marker is there holds the place; the other backs off.
  const after = parseOwner((await file.readMarker()) ?? '');
  if (!after?.holder || !sameHolder(after.holder, holder)) throw heldError(where, after?.holder ?? holder);
  return { runId, holder, notices };
}

/** The lease renewed, while this process still holds the place; OwnerLostError once another took it over. */
export async function renewClaim(
  file: MarkerFile,
  where: string,
  holder: OutputsHolder,
  now: number,
  leaseMs: number,
): Promise<OutputsHolder> {
  const current = parseOwner((await file.readMarker()) ?? '');
  if (!current?.holder || !sameHolder(current.holder, holder)) {
    const other = current?.holder;
    throw new OwnerLostError(
      `${where} was taken over${other ? ` by genbatch on ${other.host} (pid ${other.pid}) at ${when(other.since)}` : ''} while this run's lease had lapsed (the machine paused, or the bucket could not be reached to renew it): this run sends nothing more, and leaves the rest to that one.`,
    );
  }
  const renewed = { ...holder, until: now + leaseMs };
  await file.writeMarker(ownerText({ ...current, holder: renewed }));
  return renewed;
}

/** The lease given up at the run's end: the next run need not wait for it. */
export async function releaseClaim(file: MarkerFile, holder: OutputsHolder): Promise<void> {
  const current = parseOwner((await file.readMarker()) ?? '');
  if (current?.holder && sameHolder(current.holder, holder))
    await file.writeMarker(ownerText({ ...current, holder: { ...holder, until: 0 } }));
}

/**
 * The identity this run goes on with: its own when the marker records the
 * same run; the marker's when this fresh state takes over a lost one's; else
 * refused with what to do (OutputsTakenError).
 */
function sameRun(where: string, current: OutputsOwner, owner: OutputsOwner, ask: ClaimAsk, notices: string[]): string {
  const stateHere = current.state === owner.state || !ask.stateExists(current.state);
  const sameManifest =
    !current.manifest ||
    !owner.manifest ||
    current.manifest.path === owner.manifest.path ||
    current.manifest.sha256 === owner.manifest.sha256;
  if (current.rehearsal === owner.rehearsal && stateHere) {
    if (current.runId === owner.runId) {
      if (!sameManifest)
        notices.push(
          `${where} holds the outputs of the same run (same name and destination) made from ${current.manifest!.path}; this manifest (${owner.manifest!.path}) differs from it and goes on with that run`,
        );
      return owner.runId;
    }
    if (ask.fresh && sameManifest && current.state !== owner.state) {
      notices.push(
        `${where} holds the outputs of this manifest's run from a state not on this machine (${current.state}): this run goes on with it, resending its keys, so nothing is paid twice`,
      );
      return current.runId;
    }
  }
  const what = current.rehearsal
    ? `a rehearsal's outputs (--simulate, state ${current.state})`
    : `the outputs of the run whose state is ${current.state}${current.manifest ? ` (manifest ${current.manifest.path})` : ''}`;
  const goOn = current.rehearsal === owner.rehearsal ? `, or --state ${current.state} to go on with that run` : '';
  throw new OutputsTakenError(
    `${where} holds ${what}; this run (state ${owner.state}${owner.rehearsal ? ', a rehearsal' : ''}) would overwrite them, so nothing was submitted. Pass another --out${goOn}. (${OWNER_FILE} in that place names its owner.)`,
  );
}

function heldError(where: string, held: OutputsHolder): OutputsHeldError {
  return new OutputsHeldError(
    `${where} is held by genbatch on ${held.host} (pid ${held.pid}) since ${when(held.since)}; its lease runs until ${when(held.until)} and is renewed while that run lives. Nothing was submitted. If that machine is gone, run the same command after ${when(held.until)}, or now with --take-over.`,
  );
}

const isMe = (h: OutputsHolder, me: { host: string; pid: number }) => h.host === me.host && h.pid === me.pid;

const sameHolder = (a: OutputsHolder, b: OutputsHolder) => isMe(a, b) && a.since === b.since;
