import { describe, expect, it } from 'vitest';
import { parseParams, parseValue } from '../../src/config/values.js';

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

describe('a choice or a switch given a map in the file', () => {
  it('is refused naming the setting, whatever the map holds', () => {
    const problems: string[] = [];
    const odd = { toString: {} };
    expect(parseValue({ type: 'enum', values: ['a', 'b'] }, odd, 'tokenStoreMode', problems)).toBeUndefined();
    expect(parseValue({ type: 'bool' }, odd, 'accessLog', problems)).toBeUndefined();
    expect(problems).toEqual([
      'tokenStoreMode must be one of a, b (got {"toString":{}})',
      'accessLog must be true or false (got {"toString":{}})',
    ]);
  });
});
