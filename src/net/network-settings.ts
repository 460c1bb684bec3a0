import type { Config } from '../config/config.js';
import { parseCaFile, parseClientCertificate } from './tls-material.js';
import { redactUserinfo } from '../core/redact.js';
import { unreadableFileProblem } from '../core/unreadable.js';

type Out = Record<string, unknown>;

/**
 * Checks the TLS and egress proxy settings once parsed (PRODUCT §12.1, §12.2, §12.4, §12.6): the
 * files readable and well-formed at start, the client certificate and key both or neither, the
 * proxy URLs usable. Problems name the setting and never show a proxy's credentials or a key.
 */
export function checkNetworkSettings(
  out: Out,
  name: (key: keyof Config) => string,
  readFile: (path: string) => string,
  problems: string[],
): void {
  const read = (key: keyof Config): string | undefined => {
    const path = out[key] as string;
    try {
      return readFile(path);
    } catch (err) {
      problems.push(unreadableFileProblem(name(key), path, err));
      return undefined;
    }
  };

  if (out.caFile !== undefined) {
    const text = read('caFile');
    if (text !== undefined) {
      try {
        parseCaFile(text);
      } catch (err) {
        problems.push(`${name('caFile')} is not a PEM file of CA certificates: ${(err as Error).message}: ${out.caFile as string}`);
      }
    }
  }

  const hasCert = out.tlsClientCertFile !== undefined;
  const hasKey = out.tlsClientKeyFile !== undefined;
  if (out.tokenAuthMethod === 'tls_client_auth' && !hasCert && !hasKey) {
    // RFC 8705 §2.1: the certificate is the client's only proof of who it is.
    problems.push(
      `${name('tokenAuthMethod')}=tls_client_auth needs TLS_CLIENT_CERT_FILE and TLS_CLIENT_KEY_FILE: the client certificate is what proves the client`,
    );
  } else if (hasCert !== hasKey) {
    problems.push(
      `${hasCert ? name('tlsClientCertFile') : name('tlsClientKeyFile')} is set without ${hasCert ? 'TLS_CLIENT_KEY_FILE' : 'TLS_CLIENT_CERT_FILE'}: set both (certificate chain and key) or neither`,
    );
  } else if (hasCert) {
    const cert = read('tlsClientCertFile');
    const key = read('tlsClientKeyFile');
    if (cert !== undefined && key !== undefined) {
      try {
        parseClientCertificate(cert, key);
      } catch (err) {
        problems.push(`${name('tlsClientCertFile')} and ${name('tlsClientKeyFile')} are not usable: ${(err as Error).message}`);
      }
    }
  }

  for (const key of ['httpsProxy', 'httpProxy'] as const) {
    if (out[key] === undefined) continue;
    const url = proxyUrl(out[key] as string);
    if (typeof url === 'string') out[key] = url;
    else {
      problems.push(`${name(key)} must be a proxy URL such as http://proxy.example.com:3128 (got ${JSON.stringify(redactUserinfo(out[key] as string))})`);
      out[key] = undefined;
    }
  }
}

/**
 * A proxy URL as curl reads one: no scheme means `http://`; `http:` or `https:` only; nothing
 * after the authority. Returns the normalised URL, or undefined when it is not usable.
 */
export function proxyUrl(value: string): string | undefined {
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(value) ? value : `http://${value}`;
  let url: URL;
  try {
    url = new URL(withScheme);
  } catch {
    return undefined;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined;
  if ((url.pathname !== '/' && url.pathname !== '') || url.search || url.hash || url.hostname === '') return undefined;
  return url.href.replace(/\/$/, '');
}
