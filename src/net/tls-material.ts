import { createPrivateKey, X509Certificate } from 'node:crypto';
import { rootCertificates } from 'node:tls';

/** What a TLS connection to the gateway or the token endpoint is made with. */
export interface TlsMaterial {
  /** The system roots plus `CA_FILE`'s certificates; undefined: the system roots alone. */
  readonly ca?: readonly string[];
  /** Client certificate chain and key (PEM), presented when the server asks. */
  readonly cert?: string;
  readonly key?: string;
}

const PEM_CERT = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

function certificates(text: string): string[] {
  const blocks = text.match(PEM_CERT) ?? [];
  if (blocks.length === 0) throw new Error('no PEM certificate (-----BEGIN CERTIFICATE-----) in the file');
  blocks.forEach((pem, i) => {
    try {
      new X509Certificate(pem);
    } catch {
      throw new Error(`certificate ${i + 1} in the file is not a valid X.509 certificate`);
    }
  });
  return blocks;
}

/**
 * Parses `CA_FILE`: one or more PEM certificates, added to Node's bundled roots (the system roots
 * stay trusted: a private CA is an addition, never a replacement). Throws a message without content.
 */
export function parseCaFile(text: string): readonly string[] {
  return [...rootCertificates, ...certificates(text)];
}

/**
 * Parses the client certificate chain and its key, and checks they belong together (a rotation
 * caught halfway, new certificate and old key, is not used). Throws a message without content.
 */
export function parseClientCertificate(certText: string, keyText: string): { cert: string; key: string } {
  const [leaf] = certificates(certText);
  let key;
  try {
    key = createPrivateKey(keyText);
  } catch {
    throw new Error('the key file holds no readable PEM private key (an encrypted key is not supported)');
  }
  if (!new X509Certificate(leaf!).checkPrivateKey(key)) {
    throw new Error('the client certificate and the key do not belong together');
  }
  return { cert: certText, key: keyText };
}

/** Joins the two files' texts for one watched read, so both change together. */
export const PAIR_SEPARATOR = '\u0000';
