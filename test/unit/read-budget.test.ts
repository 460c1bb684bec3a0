import { describe, expect, it } from 'vitest';
import { createReadBudget } from '../../src/overload/read-budget.js';

describe('the read budget', () => {
  it('collects once each time the bytes read since the last collection reach the budget, and not before', () => {
    let collections = 0;
    const budget = createReadBudget(() => collections++, 1000, 1);
    for (let i = 0; i < 9; i++) budget.spend(100);
    expect(collections).toBe(0);
    budget.spend(100);
    expect(collections).toBe(1);
    for (let i = 0; i < 9; i++) budget.spend(100);
    expect(collections).toBe(1);
    budget.spend(250);
    expect(collections).toBe(2);
  });

  it('counts a chunk larger than the budget as one collection, then starts the budget again', () => {
    let collections = 0;
    const budget = createReadBudget(() => collections++, 1000, 1);
    budget.spend(5000);
    expect(collections).toBe(1);
    budget.spend(999);
    expect(collections).toBe(1);
  });

  it('leaves reads smaller than the smallest counted out, however many: ordinary traffic never spends it', () => {
    let collections = 0;
    const budget = createReadBudget(() => collections++, 1000, 100);
    for (let i = 0; i < 10_000; i++) budget.spend(99);
    expect(collections).toBe(0);
    for (let i = 0; i < 10; i++) budget.spend(100);
    expect(collections).toBe(1);
  });
});
