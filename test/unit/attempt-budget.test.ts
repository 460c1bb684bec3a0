import { describe, expect, it } from 'vitest';
import { LATE, attemptBudget } from '../../src/token/from-store/attempt-budget.js';
import { FakeClock, settle } from '../helpers/fake-clock.js';

describe("the store's budget of one attempt", () => {
  it('answers what an operation answers in time, its timer cleared, and LATE once the budget runs out', async () => {
    const clock = new FakeClock();
    const budget = attemptBudget(clock, 250);
    expect(await budget.within(() => Promise.resolve('first'))).toBe('first');
    expect(clock.pending).toBe(0);
    let answer: (value: string) => void = () => {};
    let result: string | typeof LATE | undefined;
    void budget.within(() => new Promise<string>((resolve) => (answer = resolve))).then((r) => (result = r));
    await clock.advance(249);
    expect(result).toBeUndefined();
    await clock.advance(1);
    expect(result).toBe(LATE);
    // What comes after that changes nothing.
    answer('lease');
    await settle();
    expect(result).toBe(LATE);
    expect(budget.leftMs()).toBe(0);
  });

  it('starts no operation once spent, and passes on a failure that comes in time', async () => {
    const clock = new FakeClock();
    const budget = attemptBudget(clock, 100);
    await expect(budget.within(() => Promise.reject(new Error('refused')))).rejects.toThrow('refused');
    expect(clock.pending).toBe(0);
    await clock.advance(100);
    let started = false;
    expect(
      await budget.within(() => {
        started = true;
        return Promise.resolve(1);
      }),
    ).toBe(LATE);
    expect(started).toBe(false);
  });

  it('takes an answer that arrived in the turn of the event loop its end fell due in: a throttled process runs its timers first', async () => {
    // The budget's timer, fired by hand: as a process held off the CPU finds it due on waking,
    // before it reads the answer that came on its socket meanwhile.
    const due: (() => void)[] = [];
    const clock = { now: () => 0, setTimeout: (fn: () => void) => due.push(fn), clearTimeout: () => undefined };
    const budget = attemptBudget(clock, 250);
    let answer: (value: string) => void = () => {};
    const result = budget.within(() => new Promise<string>((resolve) => (answer = resolve)));
    for (const fire of due) fire();
    answer('refused in time');
    expect(await result).toBe('refused in time');
  });
});
