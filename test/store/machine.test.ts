import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Lifecycle } from '../../src/store/lifecycle.js';
import { ALLOWED_CHANGES, MOVES } from '../../src/store/machine/moves.js';
import { statesReferenceText } from '../../src/store/machine/states-doc.js';
import {
  FINAL_STATES,
  ITEM_STATES,
  OPEN_STATES,
  REVIVABLE_STATES,
  WAITING_STATES,
} from '../../src/store/machine/states.js';
import { Store } from '../../src/store/index.js';

const SRC = join(import.meta.dirname, '..', '..', 'src');
/** The machine's file: the only one whose SQL may write an item's state. */
const MACHINE = join('store', 'lifecycle.ts');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? sourceFiles(join(dir, entry.name))
      : entry.name.endsWith('.ts')
        ? [join(dir, entry.name)]
        : [],
  );
}

/** Each statement in `text` that writes `items.state`: an UPDATE of items whose SET names state, or an INSERT naming it. */
function stateWrites(text: string): string[] {
  const writes: string[] = [];
  for (const m of text.matchAll(/UPDATE\s+items\s+SET\s([\s\S]*?)(?=\bWHERE\b|\bFROM\b|\bRETURNING\b|`|;|$)/gi))
    if (/(^|[\s,])state\s*=/i.test(m[1]!)) writes.push(m[0].replace(/\s+/g, ' ').slice(0, 80));
  for (const m of text.matchAll(/INSERT\s+(?:OR\s+\w+\s+)?INTO\s+items\s*\(([^)]*)\)/gi))
    if (/\bstate\b/i.test(m[1]!)) writes.push(m[0].replace(/\s+/g, ' ').slice(0, 80));
  return writes;
}

let store: Store | undefined;
afterEach(() => {
  store?.close();
  store = undefined;
});

describe("an item's life is one machine", () => {
  it("no SQL outside the machine writes an item's state (released migrations are history: a fresh state's triggers are held to it below)", () => {
    const outside: string[] = [];
    let inMachine = 0;
    for (const file of sourceFiles(SRC)) {
      const path = relative(SRC, file);
      // Released migrations are history, never run again on a state past them; a fresh state's triggers are asked below.
      if (path.startsWith(join('store', 'migrations'))) continue;
      const writes = stateWrites(readFileSync(file, 'utf8'));
      if (path === MACHINE) inMachine = writes.length;
      else outside.push(...writes.map((w) => `${path}: ${w}`));
    }
    expect(outside).toEqual([]);
    // The scan sees the machine's own writes (the insert, the moves, settle, revive): it would see one elsewhere.
    expect(inMachine).toBeGreaterThanOrEqual(7);
  });

  it('no trigger of a newly made state moves an item, and nothing writes a column to itself', () => {
    store = Store.open(join(mkdtempSync(join(tmpdir(), 'genbatch-machine-')), 's.sqlite'));
    const triggers = store.db
      .prepare<[], { name: string; sql: string }>("SELECT name, sql FROM sqlite_master WHERE type = 'trigger'")
      .all();
    expect(triggers.length).toBeGreaterThan(10);
    expect(triggers.filter((t) => stateWrites(t.sql).length > 0).map((t) => t.name)).toEqual([]);
    const noOps = sourceFiles(SRC).flatMap((file) =>
      [...readFileSync(file, 'utf8').matchAll(/SET\s+(\w+)\s*=\s*(\w+)\s*(?:,|WHERE|`)/gi)]
        .filter((m) => m[1] === m[2])
        .map((m) => `${relative(SRC, file)}: ${m[0]}`),
    );
    expect(noOps).toEqual([]);
  });

  it('groups the states truthfully: open, waiting on a person, final, revivable, each state in one group', () => {
    const groups = [OPEN_STATES, WAITING_STATES, FINAL_STATES, REVIVABLE_STATES].flat();
    expect([...groups].sort()).toEqual([...ITEM_STATES].sort());
    // Final: no move leaves it on its own (only retry and the redos, a person's commands, or its output found gone).
    // Revivable: a move does.
    const onItsOwn = (name: string) => !['retry', 'redoChanged', 'redoRejected', 'lose'].includes(name);
    for (const [name, move] of Object.entries(MOVES))
      for (const from of move.from)
        if ((FINAL_STATES as readonly string[]).includes(from) && onItsOwn(name))
          expect.fail(`${name} moves ${from}, a final state, on its own`);
    expect(
      Object.entries(MOVES).some(
        ([, m]) => (m.from as readonly string[]).includes('skipped') && (m.to as readonly string[]).includes('pending'),
      ),
    ).toBe(true);
    // Waiting: only what a decision settles (and a person's redo, or a dependency's end) moves it.
    const fromWaiting = Object.entries(MOVES).filter(([, m]) => (m.from as readonly string[]).includes('waiting'));
    expect(fromWaiting.map(([name]) => name).sort()).toEqual(['letGo', 'redoChanged', 'skip', 'skipByGate']);
  });

  it("names every move's function, and each is the machine's", () => {
    const methods = new Set(Object.getOwnPropertyNames(Lifecycle.prototype));
    const named = Object.values(MOVES).flatMap((m) => m.by.split(', '));
    expect(named.filter((f) => !methods.has(f))).toEqual([]);
    // Every state is reached by some move, and every change the table allows names two known states.
    for (const state of ITEM_STATES) expect([...ALLOWED_CHANGES].some((c) => c.endsWith(`>${state}`))).toBe(true);
    for (const change of ALLOWED_CHANGES)
      for (const state of change.split('>').filter(Boolean)) expect(ITEM_STATES).toContain(state);
  });

  it('docs/states.md is what the machine generates: its diagram and every move with its guard', () => {
    const page = readFileSync(new URL('../../docs/states.md', import.meta.url), 'utf8');
    expect(page).toBe(statesReferenceText());
    for (const [name, move] of Object.entries(MOVES)) {
      expect(page).toContain(`| ${name} |`);
      expect(page).toContain(move.guard);
    }
    expect(page).toContain('queued --> submitting: send');
  });
});
