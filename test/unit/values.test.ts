import { describe, expect, it } from 'vitest';
import { parseParams } from '../../src/config/values.js';

describe('TOKEN_PARAMS syntax', () => {
  it('reads a form-encoded string with repeated names, in order', () => {
    expect(parseParams('audience=https%3A%2F%2Fapi&resource=a&resource=b&x=a+b%2B', 'TOKEN_PARAMS')).toEqual({
      params: [
        ['audience', 'https://api'],
        ['resource', 'a'],
        ['resource', 'b'],
        ['x', 'a b+'],
      ],
      problems: [],
    });
  });

  it('reads a map of a string or a list of strings', () => {
    expect(parseParams({ audience: 'https://api', resource: ['a', 'b'] }, 'tokenParams').params).toEqual([
      ['audience', 'https://api'],
      ['resource', 'a'],
      ['resource', 'b'],
    ]);
  });

  it('refuses values that are neither strings nor lists of strings', () => {
    expect(parseParams({ a: { b: 1 } }, 'tokenParams').problems).toEqual(['tokenParams.a must be a string or a list of strings']);
    expect(parseParams([1], 'tokenParams').problems).toHaveLength(1);
  });
});
