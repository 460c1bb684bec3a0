/**
 * The operations kit against real peers: promtool unit-tests the alerting rules, and a real
 * Prometheus scrapes a real proxy that fetched tokens (one rejected first), met a gateway 401
 * with its token endpoint down (503 answers), recovered and served requests; every expression of the rules and of the Grafana
 * dashboard then evaluates through Prometheus' HTTP API.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { freePort, pollUntil, type ProxyHandle } from '../helpers/index.js';
import { sharedStack, untilReady } from '../helpers/stack.js';
import { lacks, skipNote } from '../helpers/tools.js';

const root = join(import.meta.dirname, '..', '..');
const rulesFile = join(root, 'ops/prometheus/ticket-auth-proxy-rules.yaml');
const dashboardFile = join(root, 'ops/grafana/ticket-auth-proxy-dashboard.json');

interface Rule {
  alert: string;
  expr: string;
}
const rules = (parseYaml(readFileSync(rulesFile, 'utf8')) as { groups: { rules: Rule[] }[] }).groups.flatMap((g) => g.rules);
interface Panel {
  title: string;
  targets?: { expr: string }[];
}
const dashboardExprs = (JSON.parse(readFileSync(dashboardFile, 'utf8')) as { panels: Panel[] }).panels.flatMap((p) =>
  // The route variable as Grafana sends it with All chosen: its allValue.
  (p.targets ?? []).map((t) => ({ panel: p.title, expr: t.expr.replaceAll('$route', '.*') })),
);

// The first fetch is rejected, the retry succeeds: both outcomes exist as series. A token store on
// a closed port: the store's series exist (it is down, and the proxy serves as without it).
const it = sharedStack({
  secret: 'prom-secret',
  tokenFault: { status: 401, body: { error: 'invalid_client' } },
  env: { TOKEN_WAIT_TIMEOUT_MS: '200', TOKEN_STORE_URL: 'redis://127.0.0.1:1' },
});

describe('alerting rules', () => {
  it.skipIf(lacks('promtool'))(
    `pass their promtool unit tests: each alert fires when it should and stays quiet when it should not${skipNote('promtool')}`,
    () => {
      const result = spawnSync('promtool', ['test', 'rules', 'rules.test.yaml'], { cwd: join(root, 'ops/prometheus'), encoding: 'utf8' });
      expect(result.stdout + result.stderr).toContain('SUCCESS');
      expect(result.status).toBe(0);
    },
  );

  it('are the same file in the chart and in ops/ (their runbooks: test/packaging/docs.test.ts)', () => {
    expect(readFileSync(rulesFile, 'utf8')).toBe(readFileSync(join(root, 'helm/ticket-auth-proxy/files/prometheus-rules.yaml'), 'utf8'));
  });
});

describe.skipIf(lacks('prometheus') || lacks('promtool'))(
  `a real Prometheus scraping a real proxy${skipNote('prometheus') || skipNote('promtool')}`,
  () => {
    let proxy: ProxyHandle;
    let prometheus: ChildProcess;
    let promUrl: string;
    let dir: string;

    async function query(expr: string): Promise<{ status: string; error?: string; data?: { result: unknown[] } }> {
      const response = await fetch(`${promUrl}/api/v1/query?query=${encodeURIComponent(expr)}`);
      return (await response.json()) as { status: string; error?: string; data?: { result: unknown[] } };
    }

    it.beforeAll(async ({ shared }) => {
      const { gateway } = shared;
      proxy = shared.proxy;
      // Every token revoked and the token endpoint down: a gateway 401, a failed forced refresh and
      // 503 token_unavailable answers; then the endpoint recovers and requests are served.
      gateway.revokeAll();
      gateway.setTokenFault({ status: 503, times: Infinity });
      for (let i = 0; i < 2; i++) await (await fetch(`${proxy.proxyUrl}/api/v1/tickets`)).arrayBuffer();
      gateway.clearTokenFaults();
      await untilReady(proxy);
      for (const method of ['GET', 'GET', 'POST']) {
        const response = await fetch(`${proxy.proxyUrl}/api/v1/tickets`, { method, body: method === 'POST' ? '{}' : undefined });
        await response.arrayBuffer();
      }
      await (await fetch(`${proxy.proxyUrl}/elsewhere`)).arrayBuffer();

      dir = mkdtempSync(join(tmpdir(), 'prometheus-'));
      const port = await freePort();
      promUrl = `http://127.0.0.1:${port}`;
      writeFileSync(
        join(dir, 'prometheus.yml'),
        `global: { scrape_interval: 1s, evaluation_interval: 1s }\nscrape_configs:\n  - job_name: ticket-auth-proxy\n    static_configs: [{ targets: ['127.0.0.1:${proxy.adminPort}'] }]\n`,
      );
      prometheus = spawn(
        'prometheus',
        [
          `--config.file=${join(dir, 'prometheus.yml')}`,
          `--storage.tsdb.path=${join(dir, 'data')}`,
          `--web.listen-address=127.0.0.1:${port}`,
        ],
        {
          stdio: 'ignore',
        },
      );
      // Enough scrapes for rate() over the traffic above: at least three samples of the request counter.
      await pollUntil(
        async () => {
          try {
            const r = await query('count_over_time(ticket_auth_proxy_requests_total{method="GET",code="200"}[1m])');
            return ((r.data?.result[0] as { value?: [number, string] } | undefined)?.value?.[1] ?? '0') >= '3';
          } catch {
            return false;
          }
        },
        { timeoutMs: 30_000, intervalMs: 250 },
      );
    }, 60_000);

    it.afterAll(async () => {
      prometheus?.kill('SIGTERM');
      if (prometheus && prometheus.exitCode === null) await new Promise((r) => prometheus.once('exit', r));
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    it('parses the exposition (promtool check metrics) and scrapes the target up', async () => {
      const text = await (await fetch(`${proxy.adminUrl}/metrics`)).text();
      const check = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
      expect(check.stderr).not.toMatch(/error parsing/i);
      const up = await query('up{job="ticket-auth-proxy"}');
      expect(up.data?.result).toMatchObject([{ value: [expect.any(Number), '1'] }]);
    });

    it.each(rules)('evaluates the rule $alert, and every series it reads exists', async ({ expr }) => {
      const result = await query(expr);
      expect(result.error).toBeUndefined();
      expect(result.status).toBe('success');
      const selectors = expr.match(/ticket_auth_proxy_[a-z_]+(\{[^}]*\})?/g) ?? [];
      expect(selectors.length).toBeGreaterThan(0);
      for (const selector of selectors) {
        expect((await query(selector)).data?.result.length, selector).toBeGreaterThan(0);
      }
    });

    it.each(dashboardExprs)('evaluates the dashboard panel "$panel": $expr', async ({ expr }) => {
      const result = await query(expr);
      expect(result.error).toBeUndefined();
      expect(result.data?.result.length, expr).toBeGreaterThan(0);
    });
  },
);
