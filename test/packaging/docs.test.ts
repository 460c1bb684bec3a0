/**
 * The documentation holds to the code (docs/development.md, "The documentation and its tests"):
 * every setting, metric, error code and alert is documented where a reader looks for it, and
 * nothing documented there is gone; the pages link to each other and each opens with its
 * contents; the README stays a front page.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { describe, expect } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { SETTINGS } from '../../src/config/config.js';
import * as coreErrors from '../../src/core/errors.js';
import { problemFor } from '../../src/core/problem.js';
import * as tokenErrors from '../../src/token/errors.js';
import { codeSpans, docPages, headings, links, prose, readDoc, ROOT, rowsOf, section } from '../helpers/docs.js';
import { metricsText, sharedStack } from '../helpers/stack.js';

// Every feature with metrics of its own on: a token store and a trace collector on closed ports (the
// proxy serves as without them), and DPoP.
const it = sharedStack({ env: { TOKEN_STORE_URL: 'redis://127.0.0.1:1', DPOP: 'on', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:1' } });

const RULES_FILE = 'ops/prometheus/ticket-auth-proxy-rules.yaml';
const RUNBOOK_BASE = 'https://github.com/ticket-auth-proxy/ticket-auth-proxy/blob/main/docs/operations.md';

/** The one code span of a table cell that names one thing (an env name, a file key, a metric, a code). */
function only(cell: string, what: string): string {
  const spans = codeSpans(cell);
  expect(spans, `${what}: one name in "${cell}"`).toHaveLength(1);
  return spans[0]!;
}

describe('docs/configuration.md, "Every setting"', () => {
  const rows = rowsOf(section(readDoc('docs/configuration.md'), 'Every setting'), 'env');
  const documented = new Map(rows.map((r) => [only(r[0]!, 'env'), r]));

  it('has one row for each setting of SETTINGS, and none for anything else', () => {
    expect(rows.length, 'a setting documented twice').toBe(documented.size);
    expect([...documented.keys()].sort()).toEqual(SETTINGS.map((s) => s.env).sort());
  });

  it.each(SETTINGS.map((s) => [s.env, s] as const))('gives %s its file key and its default', (env, setting) => {
    const [, key, defaultCell] = documented.get(env) ?? [];
    expect(key, `${env} is documented`).toBeDefined();
    expect(codeSpans(key!)).toEqual(setting.envOnly ? [] : [setting.key]);
    if (setting.default !== undefined) expect(codeSpans(defaultCell!)[0]).toBe(String(setting.default));
  });

  it("names in the README's first-deployment table only settings that exist", () => {
    const firstDeployment = rowsOf(section(readDoc('README.md'), 'A first deployment'), 'env');
    expect(firstDeployment.length).toBeGreaterThan(0);
    const envs = new Set(SETTINGS.map((s) => s.env));
    for (const row of firstDeployment) for (const env of codeSpans(row[0]!)) expect(envs).toContain(env);
  });
});

/**
 * The codes the proxy answers a caller with, and their statuses: every error class whose answer
 * has a status (docs/development.md, "An error"), and the 500 any other failure becomes.
 */
function answeredCodes(): Map<string, number> {
  const classes = [...Object.values(coreErrors), ...Object.values(tokenErrors)].filter(
    (v): v is typeof coreErrors.ProxyError => typeof v === 'function' && v.prototype instanceof coreErrors.ProxyError,
  );
  const codes = new Map(classes.flatMap((c) => (c.status === undefined ? [] : [[c.code, c.status] as const])));
  const { problem } = problemFor(new Error('anything else'));
  codes.set(problem.code, problem.status);
  return codes;
}

describe('docs/errors.md, "Every code"', () => {
  it('lists every code the proxy answers with, at its status, and no other', () => {
    const rows = rowsOf(section(readDoc('docs/errors.md'), 'Every code'), 'code');
    const documented = new Map(rows.map((r) => [only(r[0]!, 'code'), Number(r[1])]));
    expect(rows.length, 'a code documented twice').toBe(documented.size);
    expect(Object.fromEntries(documented)).toEqual(Object.fromEntries(answeredCodes()));
  });
});

describe('docs/operations.md, "Metrics"', () => {
  it('names every metric the running proxy exports, with its type, and no other', async ({ shared: { proxy } }) => {
    const exported = new Map(
      [...(await metricsText(proxy)).matchAll(/^# TYPE (ticket_auth_proxy_\S+) (\S+)$/gm)].map((m) => [m[1]!, m[2]!]),
    );
    expect(exported.size).toBeGreaterThan(0);
    const rows = rowsOf(section(readDoc('docs/operations.md'), 'Metrics'), 'metric');
    const documented = new Map(rows.map((r) => [only(r[0]!, 'metric'), r[1]!]));
    expect(rows.length, 'a metric documented twice').toBe(documented.size);
    expect(Object.fromEntries(documented)).toEqual(Object.fromEntries(exported));
  });
});

describe('docs/operations.md, "Alert runbooks"', () => {
  const alerts = (
    parseYaml(readFileSync(join(ROOT, RULES_FILE), 'utf8')) as {
      groups: { rules: { alert: string; annotations: { runbook_url: string } }[] }[];
    }
  ).groups.flatMap((g) => g.rules);
  const runbooks = headings(section(readDoc('docs/operations.md'), 'Alert runbooks')).filter((h) => h.level === 4);

  it(`has one runbook for each alert of ${RULES_FILE}, and none for anything else`, () => {
    expect(alerts.length).toBeGreaterThan(0);
    expect(runbooks.map((h) => h.text).sort()).toEqual(alerts.map((a) => a.alert).sort());
  });

  it("points each alert's runbook_url at its runbook", () => {
    const anchors = new Set(headings(readDoc('docs/operations.md')).map((h) => h.anchor));
    for (const { alert, annotations } of alerts) {
      const [base, anchor] = annotations.runbook_url.split('#');
      expect(base, alert).toBe(RUNBOOK_BASE);
      expect(anchors, alert).toContain(anchor);
      expect(runbooks.find((h) => h.text === alert)?.anchor).toBe(anchor);
    }
  });
});

describe('the pages', () => {
  it.each(docPages().filter((p) => p !== 'README.md'))('%s opens with contents that link each of its sections', (page) => {
    const text = readDoc(page);
    const all = headings(text);
    expect(all[0]?.level, 'a title first').toBe(1);
    const contents = /\nContents:\n\n((?:\s*- \[.*\]\(#.*\)\n)+)/.exec(text);
    expect(contents, 'a "Contents:" list').not.toBeNull();
    expect(contents!.index, 'before the first section').toBeLessThan(text.indexOf('\n## '));
    const listed = [...contents![1]!.matchAll(/\]\(#([^)]+)\)/g)].map((m) => m[1]!);
    const sections = all.filter((h) => h.level === 2).map((h) => h.anchor);
    for (const anchor of sections) expect(listed, `${page} contents`).toContain(anchor);
    for (const anchor of listed)
      expect(
        all.map((h) => h.anchor),
        `${page} contents`,
      ).toContain(anchor);
  });

  it.each(docPages())('%s links only to files and sections that exist', (page) => {
    const targets = links(readDoc(page));
    expect(targets.length, 'links read').toBeGreaterThan(0);
    for (const target of targets) {
      if (/^[a-z]+:/.test(target)) continue;
      const [path, anchor] = target.split('#') as [string, string | undefined];
      const file = path === '' ? page : normalize(join(dirname(page), path));
      expect(existsSync(join(ROOT, file)), `${page} links to ${target}`).toBe(true);
      if (anchor !== undefined && file.endsWith('.md')) {
        expect(
          headings(readDoc(file)).map((h) => h.anchor),
          `${page} links to ${target}`,
        ).toContain(anchor);
      }
    }
  });

  it.each(docPages())('%s names only repository files that exist', (page) => {
    const named = codeSpans(prose(readDoc(page))).filter((span) =>
      /^(src|test|bench|scripts|helm|ops|examples|config|docs)\/\S+$/.test(span),
    );
    for (const path of named) expect(existsSync(join(ROOT, path)), `${page} names ${path}`).toBe(true);
  });

  it('are each linked from the README, with a line saying what is in them', () => {
    const where = rowsOf(section(readDoc('README.md'), 'Where the rest is'), 'page');
    const listed = where.map((r) => /\]\(([^)#]+)\)/.exec(r[0]!)?.[1]);
    for (const page of docPages().filter((p) => p !== 'README.md')) expect(listed).toContain(page);
    for (const row of where) expect(row[1]!.length, `what is in ${row[0]}`).toBeGreaterThan(20);
  });
});

describe('the README', () => {
  const readme = readDoc('README.md');

  it('is a front page: at most 400 lines', () => {
    expect(readme.split('\n').length).toBeLessThanOrEqual(400);
  });

  it('shows the two commands on its first screen', () => {
    const firstScreen = readme.split('\n').slice(0, 40);
    for (const command of ['npm ci && npm run demo', 'npm test']) {
      expect(
        firstScreen.some((l) => l.startsWith(`${command} `)),
        command,
      ).toBe(true);
    }
  });
});
