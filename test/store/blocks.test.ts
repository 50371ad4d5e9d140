import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Store } from '../../src/store/index.js';

let store: Store | undefined;
afterEach(() => store?.close());

describe('blocked submissions over a trailing window', () => {
  it('counts those after the window’s start: a new one at once, old ones dropping out as it moves, again from the state after a restart', () => {
    const path = join(mkdtempSync(join(tmpdir(), 'genbatch-blocks-')), 's.sqlite');
    store = Store.open(path);
    const { accounting } = store;
    accounting.blocked(100, 'a');
    accounting.blocked(200, 'b');
    expect(accounting.blockedSince(50)).toBe(2);
    expect(accounting.blockedSince(150)).toBe(1);
    accounting.blocked(300, 'c');
    expect(accounting.blockedSince(150)).toBe(2);
    expect(accounting.blockedSince(250)).toBe(1);
    expect(accounting.blockedSince(300)).toBe(0);
    // A window that starts earlier than any asked before reads the state again.
    expect(accounting.blockedSince(0)).toBe(3);
    store.close();
    store = Store.open(path);
    expect(store.accounting.blockedSince(150)).toBe(2);
  });
});
