import type { SettingsCheckContext } from '../config/load.js';
import type { Config } from '../config/config.js';
import type { PasswordSource } from './redis-failure.js';
import { parseStoreUrl, type StoreEndpoint } from './redis-url.js';

/** The least key material `TOKEN_STORE_KEY_FILE` may hold: as much as the key it makes. */
export const MIN_KEY_BYTES = 32;

/**
 * A prefix is written into an ACL key pattern (`~<prefix>*`) and before a hash tag: glob
 * characters, braces, quotes and blanks would change what either means.
 */
const PREFIX = /^[A-Za-z0-9._:/@#=+-]{1,128}$/;

/** The token store's settings, checked, with its files as read at start. */
export interface StoreSettings {
  readonly endpoint: StoreEndpoint;
  readonly prefix: string;
  readonly timeoutMs: number;
  /** `TOKEN_STORE_SCRIPTS`: the scripts sent with `EVAL`, or called with `FCALL` from the library an operator loaded. */
  readonly scripts?: 'eval' | 'functions' | undefined;
  /** The password in use at start (the file's, trimmed, or the URL's); never shown. */
  readonly password: string | undefined;
  readonly passwordSource: PasswordSource;
  /** `TOKEN_STORE_PASSWORD_FILE`'s text as read, so its watcher reports no change at first. */
  readonly passwordFileText: string | undefined;
  /** `TOKEN_STORE_KEY_FILE`'s bytes, as they are (no trimming: they are key material, not text). */
  readonly keyMaterial: Uint8Array | undefined;
  /** `TOKEN_STORE_PASSWORD_FILE` and `TOKEN_STORE_KEY_FILE`, watched while the proxy runs. */
  readonly passwordFile?: string | undefined;
  readonly keyFile?: string | undefined;
}

const STORE_KEYS: readonly (keyof Config)[] = [
  'tokenStoreMode',
  'tokenStorePasswordFile',
  'tokenStoreKeyFile',
  'tokenStorePrefix',
  'tokenStoreTimeoutMs',
  'tokenStoreScripts',
];

/**
 * Checks the token store's settings: the URL (or seed URLs) and the mode, where the password
 * comes from (the file or the URL, not both), the key file's length, the prefix. Reads the files
 * once. Undefined without `TOKEN_STORE_URL`; then another `TOKEN_STORE_*` setting is a problem,
 * since it would be ignored. Problems name the setting and never show the password or the key.
 */
export function checkStoreSettings(ctx: SettingsCheckContext): StoreSettings | undefined {
  const { config } = ctx;
  if (!ctx.given('tokenStoreUrl')) {
    for (const key of STORE_KEYS.filter((k) => ctx.given(k))) {
      ctx.problem(`${ctx.name(key)} is set without TOKEN_STORE_URL: set TOKEN_STORE_URL to share tokens through a store, or remove it`);
    }
    return undefined;
  }
  if (config.tokenStoreUrl === undefined) return undefined;
  const { endpoint, problems } = parseStoreUrl(config.tokenStoreUrl, config.tokenStoreMode, ctx.name('tokenStoreUrl'));
  for (const p of problems) ctx.problem(p);

  if (!PREFIX.test(config.tokenStorePrefix)) {
    ctx.problem(
      `${ctx.name('tokenStorePrefix')} may hold only letters, digits and . _ : / @ # = + -, up to 128 ` +
        `(got ${JSON.stringify(config.tokenStorePrefix)}): it is written into an ACL key pattern and before a hash tag`,
    );
  }

  let password = endpoint?.urlPassword;
  let passwordSource: PasswordSource = password === undefined ? undefined : 'TOKEN_STORE_URL';
  let passwordFileText: string | undefined;
  if (config.tokenStorePasswordFile !== undefined) {
    if (endpoint?.urlPassword !== undefined) {
      ctx.problem(
        `${ctx.name('tokenStoreUrl')} holds a password and ${ctx.name('tokenStorePasswordFile')} is set: keep the password in ` +
          `the file alone and leave it out of the URL (a user name stays, before the "@")`,
      );
    }
    passwordFileText = ctx.readFile('tokenStorePasswordFile');
    if (passwordFileText !== undefined) {
      password = passwordFileText.trim();
      passwordSource = 'TOKEN_STORE_PASSWORD_FILE';
      if (password === '') ctx.problem(`${ctx.name('tokenStorePasswordFile')} names an empty file: ${config.tokenStorePasswordFile}`);
    }
  }
  if (endpoint?.username !== undefined && password === undefined && config.tokenStorePasswordFile === undefined) {
    ctx.problem(
      `${ctx.name('tokenStoreUrl')} names the user ${JSON.stringify(endpoint.username)} without a password: ` +
        `set TOKEN_STORE_PASSWORD_FILE to the file holding it`,
    );
  }

  let keyMaterial: Uint8Array | undefined;
  if (config.tokenStoreKeyFile !== undefined) {
    keyMaterial = ctx.readBytes('tokenStoreKeyFile');
    if (keyMaterial !== undefined && keyMaterial.length < MIN_KEY_BYTES) {
      ctx.problem(
        `${ctx.name('tokenStoreKeyFile')} holds ${keyMaterial.length} bytes; the store key needs at least ${MIN_KEY_BYTES} ` +
          `(make one with: head -c 32 /dev/urandom > FILE): ${config.tokenStoreKeyFile}`,
      );
    }
  }

  if (endpoint === undefined) return undefined;
  return {
    endpoint,
    prefix: config.tokenStorePrefix,
    timeoutMs: config.tokenStoreTimeoutMs,
    scripts: config.tokenStoreScripts,
    password,
    passwordSource,
    passwordFileText,
    keyMaterial,
    passwordFile: config.tokenStorePasswordFile,
    keyFile: config.tokenStoreKeyFile,
  };
}
