import { describe, expect, it } from 'vitest';
import { ROUTE_CHECKS, SETTINGS_CHECKS } from '../../src/app/settings-checks.js';
import { loadConfig, SettingsRefused } from '../../src/config/load.js';
import { MAX_ROUTES } from '../../src/config/routes.js';
import { filesOf } from '../helpers/load-settings.js';

/**
 * Routes in the configuration file (docs/routes.md): each route's settings over the top level's,
 * an environment variable setting only the top level's default, and every conflict refused in one
 * message naming `routes` and the route, never a secret.
 */

const FILE = '/etc/ticket-auth-proxy.yaml';
const SECRET = 's3cret-of-eu-!@#';

function load(routes: unknown, top: Record<string, unknown> = {}, env: Record<string, string> = {}) {
  return loadConfig(
    { env, file: { path: FILE, values: { ...top, routes } }, readFile: filesOf({ '/s/us': 'us-secret\n' }) },
    SETTINGS_CHECKS,
    ROUTE_CHECKS,
  );
}

function problems(routes: unknown, top: Record<string, unknown> = {}, env: Record<string, string> = {}): string[] {
  try {
    load(routes, top, env);
  } catch (err) {
    expect(err).toBeInstanceOf(SettingsRefused);
    expect((err as Error).message).not.toContain(SECRET);
    return (err as SettingsRefused).problems as string[];
  }
  throw new Error('expected the configuration to be refused');
}

const EU = { name: 'eu', mount: '/eu', baseUrl: 'https://eu.example.com', clientId: 'eu-app', clientSecret: SECRET };
const US = { name: 'us', listenPort: 9180, baseUrl: 'https://us.example.com', clientId: 'us-app', clientSecretFile: '/s/us' };

describe('routes in the configuration file', () => {
  it('without routes, makes the top-level settings the one route, default, on the main listener, forwarding /api/v1', () => {
    const loaded = loadConfig(
      { env: { BASE_URL: 'https://gw.example.com', CLIENT_ID: 'app', CLIENT_SECRET: 'x' }, readFile: filesOf({}) },
      SETTINGS_CHECKS,
      ROUTE_CHECKS,
    );
    expect(loaded.routes).toHaveLength(1);
    const [route] = loaded.routes;
    expect(route).toMatchObject({ name: 'default', way: { kind: 'main' }, paths: ['/api/v1'] });
    expect(route!.config).toBe(loaded.config);
    expect(route!.checked.token.clientSecret).toBe('x');
  });

  it("reads each route's settings over the top level's, its own way in and paths, and what its checks read", () => {
    const loaded = load([EU, { ...US, paths: ['/api/v1', '/api/v2'] }], { tokenScope: 'tickets.read', upstreamTimeoutMs: 5000 });
    const [eu, us] = loaded.routes;
    expect(eu).toMatchObject({ name: 'eu', way: { kind: 'mount', mount: '/eu' }, paths: ['/api/v1'] });
    expect(eu!.config).toMatchObject({
      baseUrl: 'https://eu.example.com',
      tokenUrl: 'https://eu.example.com/api/v1/oauth2/token',
      clientId: 'eu-app',
      tokenScope: 'tickets.read',
      upstreamTimeoutMs: 5000,
    });
    expect(eu!.checked.token.clientSecret).toBe(SECRET);
    expect(us).toMatchObject({ name: 'us', way: { kind: 'port', host: '127.0.0.1', port: 9180 }, paths: ['/api/v1', '/api/v2'] });
    expect(us!.config).toMatchObject({ baseUrl: 'https://us.example.com', tokenUrl: 'https://us.example.com/api/v1/oauth2/token' });
    expect(us!.checked.token.clientSecret).toBe('us-secret');
  });

  it("lets an environment variable set only the top level's default, never a route's own key", () => {
    const loaded = load(
      [
        { name: 'own', mount: '/own', baseUrl: 'https://own.example.com', clientId: 'own-app', clientSecret: 'a' },
        { name: 'inherits', mount: '/inherits', baseUrl: 'https://in.example.com', clientSecret: 'b' },
      ],
      {},
      { CLIENT_ID: 'from-env', TOKEN_SCOPE: 'env-scope' },
    );
    expect(loaded.routes.map((r) => r.config.clientId)).toEqual(['own-app', 'from-env']);
    expect(loaded.routes.map((r) => r.config.tokenScope)).toEqual(['env-scope', 'env-scope']);
  });

  it("takes a top-level BASE_URL as every route's default: it need not be set at the top level with routes", () => {
    expect(
      load([{ name: 'a', mount: '/a', clientId: 'x', clientSecret: 'y' }], { baseUrl: 'https://gw.example.com' }).routes[0]!.config.baseUrl,
    ).toBe('https://gw.example.com');
    expect(load([EU]).config.baseUrl).toBeUndefined();
  });

  it('refuses every conflict at once, each naming routes and the route, never a secret', () => {
    const found = problems([
      { ...EU, name: 'EU' },
      { ...EU, name: 'dup' },
      { ...EU, name: 'dup', mount: '/dup' },
      { name: 'nobase', mount: '/nobase', clientId: 'x', clientSecret: SECRET },
      { ...EU, name: 'inner', mount: '/eu/inner' },
      { ...EU, name: 'slash', mount: 'eu/' },
      { ...EU, name: 'main-one', mount: undefined },
      { ...EU, name: 'main-two', mount: undefined },
      { ...EU, name: 'both', listenPort: 9300 },
      { ...EU, name: 'global', mount: '/global', tokenStoreUrl: 'redis://x' },
      { ...EU, name: 'typo', mount: '/typo', clientSecrett: SECRET },
    ]);
    const expected = [
      /^routes: "EU"|route 1 .*its name must be lower-case letters/,
      /^routes: the route name "dup" is given 2 times/,
      /^routes: "nobase" has no baseUrl, and none is set at the top level \(BASE_URL\)/,
      /^routes: "inner" mounts \/eu\/inner, inside "(EU|dup)"'s mount \/eu/,
      /^routes: "slash": its mount must begin with "\/"/,
      /^routes: "main-one", "main-two" have no way in of their own/,
      /^routes: "both" has mount and listenPort: a route is reached one way/,
      /^routes: "global": tokenStoreUrl is not a route's own: it is the whole proxy's/,
      /^routes: "typo": clientSecrett is not a route setting; did you mean clientSecret\?/,
    ];
    for (const pattern of expected)
      expect(
        found.some((p) => pattern.test(p)),
        `${String(pattern)} in\n${found.join('\n')}`,
      ).toBe(true);
  });

  it('refuses more than 32 routes', () => {
    const many = Array.from({ length: MAX_ROUTES + 1 }, (_, i) => ({ ...EU, name: `r${i}`, mount: `/r${i}` }));
    expect(problems(many)).toContain(`routes lists ${MAX_ROUTES + 1} routes: at most ${MAX_ROUTES}`);
    expect(load(many.slice(0, MAX_ROUTES)).routes).toHaveLength(MAX_ROUTES);
  });

  it('refuses a route listener on a port taken by another route, the main listener or the admin listener, or a socket taken', () => {
    const found = problems(
      [
        { ...US, name: 'a', listenPort: 9300 },
        { ...US, name: 'b', listenPort: 9300 },
        { ...US, name: 'c', listenPort: 8181 },
        { ...US, name: 'd', listenPort: 8180 },
        { ...US, name: 'e', listenPort: undefined, listenSocket: '/run/p/a.sock' },
        { ...US, name: 'f', listenPort: undefined, listenSocket: '/run/p/a.sock' },
        { ...US, name: 'g', listenPort: undefined, listenSocket: 'relative.sock' },
      ],
      {},
    );
    expect(found).toEqual(
      expect.arrayContaining([
        'routes: "b" listens on port 9300, as route "a" does: give each route a port of its own',
        'routes: "c" listens on port 8181, as ADMIN_PORT (the admin listener) does: give each route a port of its own',
        'routes: "d" listens on port 8180, as LISTEN_PORT (the main proxy listener) does: give each route a port of its own',
        'routes: "f" listens on the socket /run/p/a.sock, as route "e" does: give each route a socket of its own',
        expect.stringMatching(/^routes: "g"'s listenSocket must be an absolute path/),
      ]),
    );
  });

  it('refuses paths and mounts that are not plain paths', () => {
    const found = problems([
      { ...EU, mount: '/eu/%2e' },
      { ...US, paths: ['/api/v1/', 'api/v2', '/api/../x'] },
    ]);
    expect(found).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^routes: "eu": its mount may hold only letters, digits/),
        expect.stringMatching(/^routes: "us": each of its paths must not end with "\/"/),
        expect.stringMatching(/^routes: "us": each of its paths must begin with "\/"/),
        expect.stringMatching(/^routes: "us": each of its paths must not hold a "\." or "\.\." segment/),
      ]),
    );
  });

  it("names a route's own setting where it is refused, with the route", () => {
    const found = problems([{ ...EU, upstreamTimeoutMs: 'soon' }]);
    expect(found.some((p) => p.startsWith(`routes[eu].upstreamTimeoutMs in ${FILE} (UPSTREAM_TIMEOUT_MS) must be`))).toBe(true);
  });

  it("lets a route's own secret file, assertion key or issuer override the top level's alternative to it, and a key set to nothing take the top level's away", () => {
    const loaded = load(
      [
        {
          name: 'eu',
          mount: '/eu',
          baseUrl: 'https://eu.example.com',
          clientId: 'eu-app',
          clientSecretFile: '/s/us',
          issuerUrl: 'https://idp.example.com',
        },
        { name: 'us', baseUrl: 'https://us.example.com', clientId: 'us-app', tokenScope: null },
      ],
      { clientSecret: SECRET, tokenUrl: 'https://top.example.com/token', tokenScope: 'tickets.read' },
    );
    const [eu, us] = loaded.routes;
    expect(eu!.config).toMatchObject({
      clientSecret: undefined,
      clientSecretFile: '/s/us',
      tokenUrl: undefined,
      issuerUrl: 'https://idp.example.com',
    });
    expect(eu!.checked.token.clientSecret).toBe('us-secret');
    expect(us!.config).toMatchObject({ clientSecret: SECRET, tokenUrl: 'https://top.example.com/token', tokenScope: undefined });
  });

  it('refuses routes that list no route', () => {
    expect(problems([], { baseUrl: 'https://gw.example.com', clientId: 'a', clientSecret: SECRET })).toEqual([
      `routes in ${FILE} lists no route: list at least one, or leave routes out for the one route of the top-level settings`,
    ]);
  });

  it("refuses a mount at or around a path the main listener's route forwards", () => {
    const main = { name: 'main', baseUrl: 'https://gw.example.com', clientId: 'a', clientSecret: SECRET };
    expect(problems([main, { ...EU, mount: '/api' }, { ...US, name: 'inner', listenPort: undefined, mount: '/api/v1/x' }])).toEqual([
      'routes: "inner" mounts /api/v1/x, inside "eu"\'s mount /api: a mount may not lie under another',
      'routes: "eu" mounts /api, over /api/v1 that "main" forwards on the main listener: choose a mount apart from the main route\'s paths',
      'routes: "inner" mounts /api/v1/x, over /api/v1 that "main" forwards on the main listener: choose a mount apart from the main route\'s paths',
    ]);
  });
});
