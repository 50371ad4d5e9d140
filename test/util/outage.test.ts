import { describe, expect, it } from 'vitest';
import { Outage } from '../../src/util/outage.js';

describe('an outage, as the service and the bucket share it', () => {
  it('the first answer ends it: since when it lasted is heard, every waiting caller goes, and a request sent before the end was sent into it', async () => {
    let now = 1_000;
    const outage = new Outage(() => now);
    const ended: [number | undefined, number][] = [];
    outage.onEnd((since, at) => ended.push([since, at]));
    const sentBefore = now;
    expect(outage.begin(now)).toBe(true);
    now = 2_000;
    expect(outage.begin(now)).toBe(false);
    expect(outage.since).toBe(1_000);
    const waiting = [outage.untilAnswer(), outage.untilAnswer()];
    expect(outage.waiting).toBe(2);
    now = 3_000;
    outage.answered();
    expect(await Promise.all(waiting)).toEqual([true, true]);
    expect(ended).toEqual([[1_000, 3_000]]);
    expect(outage.isDown).toBe(false);
    expect(outage.sentIntoEnded(sentBefore)).toBe(true);
    now = 4_000;
    expect(outage.sentIntoEnded(now)).toBe(false);
  });

  it('an answer with no request missed since the last ends nothing; one missed without an outage called still counts as ended', () => {
    let now = 0;
    const outage = new Outage(() => now);
    const ended: (number | undefined)[] = [];
    outage.onEnd((since) => ended.push(since));
    now = 10;
    outage.answered();
    expect(ended).toEqual([]);
    expect(outage.sentIntoEnded(5)).toBe(false);
    now = 20;
    outage.noAnswer(now);
    now = 30;
    outage.answered();
    expect(ended).toEqual([undefined]);
    expect(outage.sentIntoEnded(15)).toBe(true);
  });

  it('a caller is let go unanswered when it is given up, or when its own signal aborts', async () => {
    const outage = new Outage(() => 0);
    const given = outage.untilAnswer();
    outage.release(false);
    expect(await given).toBe(false);
    const controller = new AbortController();
    const mine = outage.untilAnswer(controller.signal);
    controller.abort();
    expect(await mine).toBe(false);
    expect(outage.waiting).toBe(0);
  });
});
