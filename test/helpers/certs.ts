/**
 * Certificates made at test time (never committed): a CA, server certificates for localhost and
 * 127.0.0.1 (good, wrong host, expired), and client certificates, with `@peculiar/x509` on
 * Node's WebCrypto. P-256 keys: fast to make.
 */
import { webcrypto } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import './reflect-metadata.js';
import * as x509 from '@peculiar/x509';

type CryptoKey = webcrypto.CryptoKey;
type CryptoKeyPair = webcrypto.CryptoKeyPair;

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

const ALG = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
const DAY = 86_400_000;

export interface Pem {
  cert: string;
  key: string;
}

export interface Ca extends Pem {
  name: string;
  issue(options: { cn: string; dns?: string[]; ips?: string[]; client?: boolean; notBefore?: Date; notAfter?: Date }): Promise<Pem>;
}

async function keyPem(key: CryptoKey): Promise<string> {
  const der = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', key));
  return `-----BEGIN PRIVATE KEY-----\n${der.toString('base64').replace(/(.{64})/g, '$1\n')}\n-----END PRIVATE KEY-----\n`;
}

async function keys(): Promise<CryptoKeyPair> {
  return webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify']);
}

/** A new CA, able to issue server and client certificates. */
export async function createCa(cn = 'Test CA'): Promise<Ca> {
  const pair = await keys();
  const name = `CN=${cn}`;
  const now = Date.now();
  const caCert = await x509.X509CertificateGenerator.createSelfSigned({
    name,
    notBefore: new Date(now - DAY),
    notAfter: new Date(now + 30 * DAY),
    signingAlgorithm: ALG,
    keys: pair,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(pair.publicKey),
    ],
  });
  return {
    name,
    cert: caCert.toString('pem') + '\n',
    key: await keyPem(pair.privateKey),
    async issue(o) {
      const leaf = await keys();
      const alt = [
        ...(o.dns ?? []).map((value) => ({ type: 'dns' as const, value })),
        ...(o.ips ?? []).map((value) => ({ type: 'ip' as const, value })),
      ];
      const cert = await x509.X509CertificateGenerator.create({
        subject: `CN=${o.cn}`,
        issuer: name,
        notBefore: o.notBefore ?? new Date(Date.now() - DAY),
        notAfter: o.notAfter ?? new Date(Date.now() + 10 * DAY),
        signingAlgorithm: ALG,
        publicKey: leaf.publicKey,
        signingKey: pair.privateKey,
        extensions: [
          new x509.BasicConstraintsExtension(false, undefined, true),
          new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
          new x509.ExtendedKeyUsageExtension([o.client ? x509.ExtendedKeyUsage.clientAuth : x509.ExtendedKeyUsage.serverAuth]),
          ...(alt.length > 0 ? [new x509.SubjectAlternativeNameExtension(alt)] : []),
          await x509.AuthorityKeyIdentifierExtension.create(caCert),
        ],
      });
      return { cert: cert.toString('pem') + '\n', key: await keyPem(leaf.privateKey) };
    },
  };
}

/** A server certificate valid for localhost and 127.0.0.1. */
export function localhostCert(ca: Ca, options: { notBefore?: Date; notAfter?: Date } = {}): Promise<Pem> {
  return ca.issue({ cn: 'localhost', dns: ['localhost'], ips: ['127.0.0.1'], ...options });
}

/** A certificate valid for another host only. */
export function wrongHostCert(ca: Ca): Promise<Pem> {
  return ca.issue({ cn: 'tickets.other.example', dns: ['tickets.other.example'] });
}

/** A certificate for localhost whose validity ended yesterday. */
export function expiredCert(ca: Ca): Promise<Pem> {
  return localhostCert(ca, { notBefore: new Date(Date.now() - 10 * DAY), notAfter: new Date(Date.now() - DAY) });
}

/** A client certificate. */
export function clientCert(ca: Ca, cn = 'ticket-auth-proxy'): Promise<Pem> {
  return ca.issue({ cn, client: true });
}

/** A temporary folder for certificate files, removed by `remove()`. */
export function tempDir(): { dir: string; write(name: string, text: string): string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'tap-tls-'));
  return {
    dir,
    write(name, text) {
      const path = join(dir, name);
      writeFileSync(path, text);
      return path;
    },
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
