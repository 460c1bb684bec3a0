import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import type { Clock } from '../core/clock.js';
import type { Config } from '../config/config.js';
import { watchFile } from '../core/watched-file.js';
import type { Log } from '../core/log.js';
import { PAIR_SEPARATOR, parseCaFile, parseClientCertificate, type TlsMaterial } from './tls-material.js';

type TlsSettings = Pick<Config, 'caFile' | 'tlsClientCertFile' | 'tlsClientKeyFile'>;

function pairText(cert: string, key: string): string {
  return `${cert}${PAIR_SEPARATOR}${key}`;
}

function parsePair(text: string): { cert: string; key: string } {
  const at = text.indexOf(PAIR_SEPARATOR);
  return parseClientCertificate(text.slice(0, at), text.slice(at + 1));
}

/** Reads the TLS material named by the settings (checked already by `loadConfig`). */
export function readTlsMaterial(config: TlsSettings, read: (path: string) => string = (p) => readFileSync(p, 'utf8')): TlsMaterial {
  return {
    ...(config.caFile !== undefined ? { ca: parseCaFile(read(config.caFile)) } : {}),
    ...(config.tlsClientCertFile !== undefined && config.tlsClientKeyFile !== undefined
      ? parsePair(pairText(read(config.tlsClientCertFile), read(config.tlsClientKeyFile)))
      : {}),
  };
}

export interface TlsWatchOptions {
  config: TlsSettings;
  /** The material in use, as read at start. */
  initial: TlsMaterial;
  /** New material; `what` says which file changed. */
  onChange: (material: TlsMaterial, what: 'ca' | 'client_certificate') => void;
  clock: Clock;
  log: Log;
}

/**
 * Watches `CA_FILE` and the client certificate and key (PRODUCT §12.6) with the watched-file rules:
 * a bad file later is logged and the previous material stays in use. The certificate and the key
 * are read together, so a rotation caught halfway is not used. Returns a function that stops it.
 */
export function watchTlsFiles(options: TlsWatchOptions): () => void {
  const { config, clock, log } = options;
  let material = options.initial;
  const read = (p: string): Promise<string> => readFile(p, 'utf8');
  const stops: (() => void)[] = [];
  if (config.caFile !== undefined) {
    const path = config.caFile;
    stops.push(
      watchFile({
        path,
        what: 'CA_FILE',
        initialText: readFileSync(path, 'utf8'),
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
        initialText: pairText(readFileSync(certFile, 'utf8'), readFileSync(keyFile, 'utf8')),
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
