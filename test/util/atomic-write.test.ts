import { existsSync, mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AtomicFile, writeFileAtomic } from '../../src/util/atomic-write.js';

describe('writeFileAtomic', () => {
  it('writes a large report chunk by chunk, whole, leaving no listener behind (no MaxListeners warning) and no temp file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'genbatch-atomic-'));
    const chunk = 'x'.repeat(64 * 1024); // each write fills the stream's buffer: one wait for drain per chunk
    const chunks = function* () {
      for (let i = 0; i < 50; i++) yield `${i}:${chunk}\n`;
    };
    await writeFileAtomic(join(dir, 'results.jsonl'), chunks());
    const lines = readFileSync(join(dir, 'results.jsonl'), 'utf8').trim().split('\n');
    expect(lines).toHaveLength(50);
    expect(lines.map((l) => Number(l.split(':')[0]))).toEqual([...Array(50).keys()]);
    expect(readdirSync(dir)).toEqual(['results.jsonl']);
  });

  it('a write that fails leaves neither the file nor its temp file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'genbatch-atomic-'));
    const failing = function* () {
      yield 'start\n';
      throw new Error('the report could not be built');
    };
    await expect(writeFileAtomic(join(dir, 'index.html'), failing())).rejects.toThrow('could not be built');
    expect(existsSync(join(dir, 'index.html'))).toBe(false);
    expect(readdirSync(dir)).toEqual([]);
  });
});

describe('AtomicFile', () => {
  it('shows nothing at its path until commit, then the whole; an aborted one leaves neither file nor temp file, and an older file stays', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'genbatch-atomic-'));
    const done = await AtomicFile.open(join(dir, 'a.csv'));
    for (let i = 0; i < 40; i++) await done.write(`${i},${'y'.repeat(64 * 1024)}\n`);
    expect(existsSync(join(dir, 'a.csv'))).toBe(false);
    await done.commit();
    expect(readFileSync(join(dir, 'a.csv'), 'utf8').trim().split('\n')).toHaveLength(40);

    const dropped = await AtomicFile.open(join(dir, 'a.csv'));
    await dropped.write('half');
    await dropped.abort();
    expect(readdirSync(dir)).toEqual(['a.csv']);
    expect(readFileSync(join(dir, 'a.csv'), 'utf8').trim().split('\n')).toHaveLength(40);
  });
});
