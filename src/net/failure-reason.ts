import { redactUserinfo } from '../core/redact.js';

type Coded = Error & { code?: unknown; cause?: unknown };

/** Codes of a TLS verification or handshake failure: the server's certificate or ours. */
const TLS_CODE = /^(ERR_TLS_|ERR_SSL_|UNABLE_TO_|CERT_|DEPTH_ZERO_|SELF_SIGNED_|HOSTNAME_MISMATCH|ERR_OSSL_)/;

function chain(err: unknown): Coded[] {
  const out: Coded[] = [];
  let e: unknown = err;
  while (e instanceof Error && out.length < 5) {
    out.push(e as Coded);
    e = (e as Coded).cause;
  }
  return out;
}

/**
 * OpenSSL's code when the answer to the client's TLS handshake is no TLS record: the server speaks
 * something else on that port, most often plain HTTP (its `400 Bad Request` to the handshake).
 */
const NOT_TLS = 'ERR_SSL_WRONG_VERSION_NUMBER';

/** What a server that answered the TLS handshake with something else than TLS is said to do. */
export const NOT_TLS_REASON = `does not speak TLS (${NOT_TLS})`;

/** True when the server was reached and answered the TLS handshake with something else than TLS. */
export function answeredWithoutTls(err: unknown): boolean {
  return chain(err).some((e) => e.code === NOT_TLS);
}

/**
 * What to do when {@link answeredWithoutTls}: the server was reached but speaks plain text on that
 * port. `settings`: the setting(s) that hold its URL.
 */
export function notTlsAdvice(settings: string): string {
  return (
    `it was reached, but answered the TLS handshake with something else, as a plain-HTTP server does; for a plain-HTTP ` +
    `server write http:// in ${settings} (allowed for a loopback host, for another host with ALLOW_INSECURE_HTTP=true), ` +
    `else use the port that serves HTTPS`
  );
}

/**
 * Why a connection to the gateway or the token endpoint failed, in a few words an operator can
 * act on: the TLS reason (`CERT_HAS_EXPIRED`, ...), the egress proxy's
 * refusal with its status, or the socket error's code. undici puts a TLS error as it is, or as
 * the `cause` of its own error when the connection went through a proxy. `overTls`: the URL is
 * `https:`, so a certificate may be the reason a server hangs up. Never holds credentials.
 */
export function networkFailureReason(err: unknown, overTls: boolean): string {
  const errors = chain(err);
  for (const e of errors) {
    const code = typeof e.code === 'string' ? e.code : '';
    if (TLS_CODE.test(code)) return `TLS: ${code}${tlsHint(code)}`;
  }
  for (const e of errors) {
    // ProxyAgent: "Proxy response (407) !== 200 when HTTP Tunneling"; absolute-form: "... (407)".
    const status = /^Proxy (?:response \((\d{3})\)|Authentication Required \((\d{3})\))/.exec(e.message);
    if (status) {
      const code = status[1] ?? status[2]!;
      return `egress proxy refused: ${code}${code === '407' ? ' Proxy Authentication Required' : ''}`;
    }
  }
  for (const e of errors) {
    const code = typeof e.code === 'string' ? e.code : '';
    if (code !== '' && !code.startsWith('UND_ERR_')) return code;
    if (code === 'UND_ERR_SOCKET' && (e as { socket?: { bytesRead?: number } }).socket?.bytesRead === 0) {
      if (!overTls) return `${code} (the server closed the connection before answering)`;
      // TLS 1.3: a server that wants a client certificate and got none may close the
      // connection after the handshake without an alert (Node's own TLS servers do).
      return (
        `${code} (the server closed the connection before answering; a server that requires a client certificate does ` +
        `this when none is presented: TLS_CLIENT_CERT_FILE, TLS_CLIENT_KEY_FILE)`
      );
    }
  }
  const first = errors[0];
  if (first === undefined) return String(err);
  const code = typeof first.code === 'string' ? first.code : undefined;
  return redactUserinfo(code ?? first.message);
}

function tlsHint(code: string): string {
  switch (code) {
    case 'UNABLE_TO_VERIFY_LEAF_SIGNATURE':
    case 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY':
    case 'SELF_SIGNED_CERT_IN_CHAIN':
    case 'DEPTH_ZERO_SELF_SIGNED_CERT':
      return ' (the server certificate is not signed by a trusted CA; set CA_FILE to a private CA)';
    case 'ERR_TLS_CERT_ALTNAME_INVALID':
      return ' (the server certificate is not valid for this host name)';
    case 'CERT_HAS_EXPIRED':
      return ' (the server certificate has expired)';
    case 'CERT_NOT_YET_VALID':
      return ' (the server certificate is not valid yet)';
    case 'ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED':
    case 'ERR_SSL_SSLV3_ALERT_HANDSHAKE_FAILURE':
    case 'ERR_SSL_SSL/TLS_ALERT_HANDSHAKE_FAILURE':
      return ' (the server requires a client certificate; set TLS_CLIENT_CERT_FILE and TLS_CLIENT_KEY_FILE)';
    case NOT_TLS:
      return ' (the server does not speak TLS on this port: plain HTTP?)';
    case 'ERR_SSL_SSLV3_ALERT_BAD_CERTIFICATE':
    case 'ERR_SSL_TLSV1_ALERT_UNKNOWN_CA':
      return ' (the server rejected the client certificate)';
    default:
      return '';
  }
}
