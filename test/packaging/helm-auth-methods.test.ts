/**
 * The chart names the client authentication methods in its schema, its start-up checks and its
 * container's environment; Helm cannot read the proxy's table of methods, so this holds them to it.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { SETTINGS, TOKEN_AUTH_METHODS } from '../../src/config/config.js';
import { AUTH_METHODS } from '../../src/token/client-auth/index.js';

const chart = join(import.meta.dirname, '..', '..', 'helm', 'ticket-auth-proxy');
const read = (...path: string[]): string => readFileSync(join(chart, ...path), 'utf8');
const validate = read('templates', '_validate.tpl');
const helpers = read('templates', '_helpers.tpl');
const secretMethods = AUTH_METHODS.filter((m) => m.usesSecret).map((m) => m.name);
const all = (re: RegExp, text: string): string[] => [...text.matchAll(re)].map((m) => m[1]!);

describe("the chart's client authentication methods", () => {
  it('offers in values.schema.json the methods the client secret proves: the chart hands the proxy a secret file', () => {
    const schema = JSON.parse(read('values.schema.json')) as { properties: { tokenAuthMethod: { enum: string[] } } };
    expect(schema.properties.tokenAuthMethod.enum).toEqual(secretMethods);
    const comment = /^# -- (.*)\ntokenAuthMethod:/m.exec(read('values.yaml'))![1]!;
    for (const name of secretMethods) expect(comment).toContain(name);
  });

  it('checks TOKEN_AUTH_METHOD in _validate.tpl against every name, the same default, and the same secret methods', () => {
    const body = /define "ticket-auth-proxy\.settingKinds" -}}\n([\s\S]*?)\{\{- end -}}/.exec(validate)![1]!;
    const kinds = parseYaml(body) as Record<string, { values: string[] }>;
    expect(kinds.TOKEN_AUTH_METHOD!.values).toEqual([...TOKEN_AUTH_METHODS]);
    const defaults = all(/index \$out "TOKEN_AUTH_METHOD" \| default "([^"]+)"/g, validate);
    expect(defaults).toEqual([SETTINGS.find((s) => s.env === 'TOKEN_AUTH_METHOD')!.default]);
    const secretLists = all(/has \$method \(list ((?:"[^"]+" ?)+)\)/g, validate).map((list) => all(/"([^"]+)"/g, list));
    expect(secretLists).toEqual([secretMethods]);
  });

  it('names no method the proxy does not know, in a comparison, a message or the environment it sets', () => {
    const named = [
      ...all(/(?:eq|ne) \$method "([^"]+)"/g, validate),
      ...all(/TOKEN_AUTH_METHOD=([a-z_]+)/g, validate + helpers),
      ...all(/name: TOKEN_AUTH_METHOD\n\s+value: "([^"]+)"/g, helpers),
    ];
    expect(named.length).toBeGreaterThan(5);
    expect(named.filter((name) => !(TOKEN_AUTH_METHODS as readonly string[]).includes(name))).toEqual([]);
  });
});
