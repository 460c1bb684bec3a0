import { readFile } from 'node:fs/promises';
import type { Clock } from '../core/clock.js';
import type { Config } from '../config/config.js';
import { watchFile } from '../core/watched-file.js';
import type { Log } from '../core/log.js';
import { PAIR_SEPARATOR, parseCaFile, parseClientCertificate, type TlsMaterial } from './tls-material.js';

type TlsSettings = Pick<Config, 'caFile' | 'tlsClientCertFile' | 'tlsClientKeyFile'>;

/** The TLS files as read and checked at start (`checkNetSettings`): the material, and the texts it came from. */
export interface TlsFiles {
  readonly material: TlsMaterial;
  readonly caText?: string;
  readonly certText?: string;
  readonly keyText?: string;
}

function pairText(cert: string, key: string): string {
  return `${cert}${PAIR_SEPARATOR}${key}`;
}

function parsePair(text: string): { cert: string; key: string } {
  const at = text.indexOf(PAIR_SEPARATOR);
  return parseClientCertificate(text.slice(0, at), text.slice(at + 1));
}

export interface TlsWatchOptions {
  config: TlsSettings;
  /** The files as read at start: the watchers start from them, so a first read reports no change. */
  initial: TlsFiles;
  /** New material; `what` says which file changed. */
  onChange: (material: TlsMaterial, what: 'ca' | 'client_certificate') => void;
  clock: Clock;
  log: Log;
}

/**
 * Watches `CA_FILE` and the client certificate and key with the watched-file rules
 * (`core/watched-file.ts`): a rotated file is used by new connections; a bad file later is logged
 * and the previous material stays in use. The certificate and the key are read together, so a
 * rotation caught halfway is not used. Returns a function that stops it.
 */
export function watchTlsFiles(options: TlsWatchOptions): () => void {
  const { config, clock, log, initial } = options;
  let material = initial.material;
  const read = (p: string): Promise<string> => readFile(p, 'utf8');
  const stops: (() => void)[] = [];
  if (config.caFile !== undefined) {
    stops.push(
      watchFile({
        path: config.caFile,
        what: 'CA_FILE',
        ...(initial.caText !== undefined ? { initialText: initial.caText } : {}),
        parse: parseCaFile,
        onChange: (ca) => {
          material = { ...material, ca };
          options.onChange(material, 'ca');
        },
        clock,
        log,
      }),
    );
  }
  const certFile = config.tlsClientCertFile;
  const keyFile = config.tlsClientKeyFile;
  if (certFile !== undefined && keyFile !== undefined) {
    stops.push(
      watchFile({
        path: certFile,
        what: 'TLS_CLIENT_CERT_FILE/TLS_CLIENT_KEY_FILE',
        ...(initial.certText !== undefined && initial.keyText !== undefined
          ? { initialText: pairText(initial.certText, initial.keyText) }
          : {}),
        read: async () => pairText(await read(certFile), await read(keyFile)),
        parse: parsePair,
        onChange: (pair) => {
          material = { ...material, ...pair };
          options.onChange(material, 'client_certificate');
        },
        clock,
        log,
      }),
    );
  }
  return () => {
    for (const stop of stops) stop();
  };
}
