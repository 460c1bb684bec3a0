import type { SettingsCheckContext } from '../config/load.js';
import type { TlsFiles } from './tls-files.js';
import { parseCaFile, parseClientCertificate, type TlsMaterial } from './tls-material.js';

/**
 * Checks the TLS settings once parsed: `CA_FILE` readable and holding PEM certificates, the
 * client certificate and key both or neither, readable and belonging together. Reads each file
 * once and returns what it read, so the connections and the file watchers start from it.
 * Problems name the setting and never show a key.
 */
export function checkNetSettings(ctx: SettingsCheckContext): TlsFiles {
  const { config } = ctx;
  let material: TlsMaterial = {};
  const texts: { caText?: string; certText?: string; keyText?: string } = {};

  if (config.caFile !== undefined) {
    const text = ctx.readFile('caFile');
    if (text !== undefined) {
      try {
        material = { ...material, ca: parseCaFile(text) };
        texts.caText = text;
      } catch (err) {
        ctx.problem(`${ctx.name('caFile')} is not a PEM file of CA certificates: ${(err as Error).message}: ${config.caFile}`);
      }
    }
  }

  const hasCert = config.tlsClientCertFile !== undefined;
  const hasKey = config.tlsClientKeyFile !== undefined;
  if (hasCert !== hasKey) {
    ctx.problem(
      `${hasCert ? ctx.name('tlsClientCertFile') : ctx.name('tlsClientKeyFile')} is set without ` +
        `${hasCert ? 'TLS_CLIENT_KEY_FILE' : 'TLS_CLIENT_CERT_FILE'}: set both (certificate chain and key) or neither`,
    );
  } else if (hasCert) {
    const cert = ctx.readFile('tlsClientCertFile');
    const key = ctx.readFile('tlsClientKeyFile');
    if (cert !== undefined && key !== undefined) {
      try {
        material = { ...material, ...parseClientCertificate(cert, key) };
        texts.certText = cert;
        texts.keyText = key;
      } catch (err) {
        ctx.problem(`${ctx.name('tlsClientCertFile')} and ${ctx.name('tlsClientKeyFile')} are not usable: ${(err as Error).message}`);
      }
    }
  }
  return { material, ...texts };
}
