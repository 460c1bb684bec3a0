import type { DpopMode } from '../../config/config.js';
import type { SettingsCheckContext } from '../../config/load.js';
import { generateDpopKey, loadDpopKey, type DpopKey } from './dpop-key.js';

/** What the DPoP settings give at start, read once and handed on. */
export interface DpopStartup {
  readonly mode: DpopMode;
  /** With `DPOP` on or required: the key the proofs start with, from `DPOP_KEY_FILE` or generated. */
  readonly key?: DpopKey;
  /** The key file's text as read at start, so its watch reports no change on the first read. */
  readonly keyText?: string;
}

/**
 * The DPoP settings (RFC 9449): `DPOP_KEY_FILE` and `DPOP_ALG` only with `DPOP` on or required
 * (a key mounted while DPoP is off would leave the tokens bearer tokens without anyone noticing);
 * the key file readable, a private key of a supported type and size, and the algorithm one the
 * key can sign. Without a key file a key is generated (P-256, or the type `DPOP_ALG` needs) and
 * kept in memory only. Messages name the setting, never the key.
 */
export function checkDpopSettings(ctx: SettingsCheckContext): DpopStartup {
  const { config } = ctx;
  const mode = config.dpop;
  if (mode === 'off') {
    // A value refused on its own is already reported; say nothing more about it.
    for (const key of ['dpopKeyFile', 'dpopAlg'] as const) {
      if (config[key] !== undefined)
        ctx.problem(`${ctx.name(key)} is set but DPOP is off: set DPOP=on (or required) to send DPoP proofs, or remove it`);
    }
    return { mode };
  }
  const path = config.dpopKeyFile;
  if (path === undefined) {
    // Given but refused (reported already): no key to generate in its place.
    if (ctx.given('dpopKeyFile') || (ctx.given('dpopAlg') && config.dpopAlg === undefined)) return { mode };
    return { mode, key: generateDpopKey(config.dpopAlg) };
  }
  const text = ctx.readFile('dpopKeyFile');
  if (text === undefined) return { mode };
  try {
    return { mode, key: loadDpopKey(text, config.dpopAlg), keyText: text };
  } catch (err) {
    ctx.problem(`${ctx.name('dpopKeyFile')} ${(err as Error).message}: ${path}`);
    return { mode };
  }
}
