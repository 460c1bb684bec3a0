import { connect as tlsConnect } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../src/config/config.js';
import { proxyUrl } from '../../src/config/values.js';
import { ConfigError } from '../../src/core/errors.js';
import { networkFailureReason } from '../../src/net/failure-reason.js';
import type { TlsFiles } from '../../src/net/tls-files.js';
import { redactUserinfo, withoutUserinfo } from '../../src/core/redact.js';
import { createMockTicketService, type MockTicketService } from '../../src/mock/ticket-service.js';
import { clientCert, createCa, expiredCert, type Ca, type Pem } from '../helpers/certs.js';
import { filesOf, loadSettings } from '../helpers/load-settings.js';

const BASE = { BASE_URL: 'https://gw.example.com', CLIENT_ID: 'app', CLIENT_SECRET: 'secret-value' };
let ca: Ca;
let client: Pem;
let other: Pem;

beforeAll(async () => {
  ca = await createCa();
  client = await clientCert(ca);
  other = await clientCert(ca, 'other');
});

function loadBoth(env: Record<string, string>, files: Record<string, string> = {}): { config: Config; tls: TlsFiles } {
  const { config, checked } = loadSettings({ env: { ...BASE, ...env }, readFile: filesOf(files) });
  return { config, tls: checked.tls };
}

function load(env: Record<string, string>, files: Record<string, string> = {}): Config {
  return loadBoth(env, files).config;
}

function problems(env: Record<string, string>, files: Record<string, string> = {}): string {
  try {
    load(env, files);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error('expected a ConfigError');
}

describe('TLS and egress proxy settings', () => {
  it('accepts a PEM CA file and a matching client certificate and key, reading each once and handing them on', () => {
    const reads: string[] = [];
    const files: Record<string, string> = { '/ca.pem': ca.cert, '/tls.crt': client.cert, '/tls.key': client.key };
    const { config, checked } = loadSettings({
      env: { ...BASE, CA_FILE: '/ca.pem', TLS_CLIENT_CERT_FILE: '/tls.crt', TLS_CLIENT_KEY_FILE: '/tls.key' },
      readFile: (p) => {
        reads.push(p);
        return filesOf(files)(p);
      },
    });
    expect(config).toMatchObject({ caFile: '/ca.pem', tlsClientCertFile: '/tls.crt', tlsClientKeyFile: '/tls.key' });
    expect(reads.sort()).toEqual(['/ca.pem', '/tls.crt', '/tls.key']);
    expect(checked.tls).toMatchObject({ caText: ca.cert, certText: client.cert, keyText: client.key });
    expect(checked.tls.material.ca).toContain(ca.cert.trim());
    expect(checked.tls.material).toMatchObject({ cert: client.cert, key: client.key });
  });

  it('hands on no material when no TLS file is named', () => {
    expect(loadBoth({}).tls).toEqual({ material: {} });
  });

  it('names CA_FILE when it cannot be read or holds no certificate', () => {
    expect(problems({ CA_FILE: '/missing.pem' })).toContain('CA_FILE names a file that cannot be read (ENOENT): /missing.pem');
    expect(problems({ CA_FILE: '/ca.pem' }, { '/ca.pem': 'hello\n' })).toContain('CA_FILE is not a PEM file of CA certificates');
  });

  it('wants the client certificate and key both or neither, and belonging together', () => {
    expect(problems({ TLS_CLIENT_CERT_FILE: '/tls.crt' }, { '/tls.crt': client.cert })).toContain(
      'TLS_CLIENT_CERT_FILE is set without TLS_CLIENT_KEY_FILE',
    );
    expect(problems({ TLS_CLIENT_KEY_FILE: '/tls.key' }, { '/tls.key': client.key })).toContain(
      'TLS_CLIENT_KEY_FILE is set without TLS_CLIENT_CERT_FILE',
    );
    const msg = problems(
      { TLS_CLIENT_CERT_FILE: '/tls.crt', TLS_CLIENT_KEY_FILE: '/tls.key' },
      { '/tls.crt': client.cert, '/tls.key': other.key },
    );
    expect(msg).toContain('do not belong together');
    expect(msg).not.toContain('PRIVATE KEY');
  });

  it('reads proxy variables as curl does: lower-case names win, no scheme means http', () => {
    expect(load({ HTTPS_PROXY: 'http://upper:3128', https_proxy: 'http://lower:3128' }).httpsProxy).toBe('http://lower:3128');
    expect(load({ HTTP_PROXY: 'proxy.corp:3128' }).httpProxy).toBe('http://proxy.corp:3128');
    expect(load({ no_proxy: '.corp,localhost', NO_PROXY: 'x' }).noProxy).toBe('.corp,localhost');
  });

  it('names a bad proxy URL without a scheme without showing its credentials', () => {
    const msg = problems({ HTTPS_PROXY: 'user:hunter2@proxy.example:3128/x' });
    expect(msg).toContain('HTTPS_PROXY must be a proxy URL');
    expect(msg).toContain('***@proxy.example:3128/x');
    expect(msg).not.toContain('hunter2');
  });

  it('names a bad proxy URL without showing its credentials', () => {
    const msg = problems({ https_proxy: 'ftp://user:hunter2@proxy:21' });
    expect(msg).toContain('https_proxy (HTTPS_PROXY) must be a proxy URL');
    expect(msg).not.toContain('hunter2');
    expect(proxyUrl('http://proxy:3128/path')).toBeUndefined();
    expect(proxyUrl('https://u:p@proxy:3128/')).toBe('https://u:p@proxy:3128');
  });

  it('redacts the user information of every URL in a text', () => {
    expect(redactUserinfo('via http://user:secret@proxy:3128 and https://a@b/c')).toBe('via http://***@proxy:3128 and https://***@b/c');
    expect(withoutUserinfo('user:secret@proxy.example:3128/x')).toBe('***@proxy.example:3128/x');
    expect(withoutUserinfo('http://user:p@ss@proxy:3128')).toBe('http://***@proxy:3128');
    // A password with an unencoded slash, question mark or hash: the URL does not parse, and is shown.
    expect(withoutUserinfo('http://user:Ab/cd+SECRET@proxy.corp:3128')).toBe('http://***@proxy.corp:3128');
    expect(redactUserinfo('(got "rediss://default:k9/S?E#CRET+z=@redis:6379")')).toBe('(got "rediss://***@redis:6379")');
    // Or a space: in a value, and in a message that quotes it.
    expect(withoutUserinfo('redis://proxy:my secret@cache:6379/db1')).toBe('redis://***@cache:6379/db1');
    expect(redactUserinfo('TOKEN_STORE_URL is wrong (got "redis://proxy:my secret@cache:6379/db1"); see "x"')).toBe(
      'TOKEN_STORE_URL is wrong (got "redis://***@cache:6379/db1"); see "x"',
    );
  });
});

describe('networkFailureReason', () => {
  let expired: MockTicketService;
  beforeAll(async () => {
    expired = await createMockTicketService({ tls: await expiredCert(ca) });
  });
  afterAll(() => expired.close());

  it('names the TLS code of a real handshake failure, with what to do', async () => {
    const err = await new Promise<Error>((resolve) => {
      const s = tlsConnect({ host: '127.0.0.1', port: expired.port, servername: 'localhost', ca: ca.cert });
      s.on('error', resolve);
    });
    expect(networkFailureReason(err, true)).toBe('TLS: CERT_HAS_EXPIRED (the server certificate has expired)');
    expect(networkFailureReason(new Error('wrapped', { cause: err }), true)).toContain('CERT_HAS_EXPIRED');
  });

  it("names an egress proxy's refusal by its status", () => {
    const tunnel = Object.assign(new Error('Proxy response (403) !== 200 when HTTP Tunneling'), { code: 'UND_ERR_ABORTED' });
    expect(networkFailureReason(tunnel, true)).toBe('egress proxy refused: 403');
    expect(networkFailureReason(new Error('Proxy Authentication Required (407)'), true)).toBe(
      'egress proxy refused: 407 Proxy Authentication Required',
    );
  });

  it('keeps a plain socket code, and never shows URL credentials from a message', () => {
    expect(networkFailureReason(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }), true)).toBe('ECONNREFUSED');
    expect(networkFailureReason(new Error('cannot reach http://u:pw@proxy:1'), true)).toBe('cannot reach http://***@proxy:1');
  });
});
