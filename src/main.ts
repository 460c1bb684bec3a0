#!/usr/bin/env node
import { readFileSync } from 'node:fs';
import { Registry } from 'prom-client';
import { startApp } from './app/app.js';
import { helpText, parseArgs } from './app/cli.js';
import { readConfig, settingWarnings } from './app/read-config.js';
import { systemClock } from './core/clock.js';
import type { Config } from './config/config.js';
import { ConfigError, TokenFetchError } from './core/errors.js';
import { createLogger } from './core/log.js';
import { createDispatchers } from './net/dispatchers.js';
import { checkNetSettings } from './net/settings.js';
import type { TlsFiles } from './net/tls-files.js';
import { configuredCredential } from './token/configured-credential.js';
import { describeTokenFailure } from './token/diagnose.js';
import { tokenFetcherFromConfig } from './token/fetch-token.js';
import { checkTokenSettings, type TokenStartup } from './token/settings.js';

const VERSION = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;

function fail(message: string, status = 2): never {
  process.stderr.write(`ticket-auth-proxy: ${message}\n`);
  process.exit(status);
}

/** `check`: one token fetch, its lifetime printed (never the token), exit 0 or 1 (PRODUCT §2). */
async function check(config: Config, startup: { tls: TlsFiles; token: TokenStartup }): Promise<never> {
  const auth = configuredCredential(config, { clock: systemClock, log: createLogger('silent'), startup: startup.token });
  const credential = auth.credential;
  if (credential === undefined) {
    fail('check needs CLIENT_ID and CLIENT_SECRET_FILE (or CLIENT_SECRET)');
  }
  const dispatchers = createDispatchers({
    gatewayOrigin: new URL(config.baseUrl).origin,
    tokenUrl: config.tokenUrl,
    gatewayConnectTimeoutMs: config.tokenFetchTimeoutMs,
    tokenConnectTimeoutMs: config.tokenFetchTimeoutMs,
    proxy: { httpsProxy: config.httpsProxy, httpProxy: config.httpProxy, noProxy: config.noProxy },
    tls: startup.tls.material,
  });
  // What the credential is, without the assertion or key (issue 15 §3).
  for (const line of auth.describe(Date.now())) process.stdout.write(`${line}\n`);
  const fetchToken = tokenFetcherFromConfig(config, dispatchers.token, Date.now, auth.clientAuth);
  const started = Date.now();
  try {
    const grant = await fetchToken(credential);
    const lifetimeS = Math.round(grant.lifetimeMs / 1000);
    process.stdout.write(
      `ok: token obtained from ${config.tokenUrl} in ${Date.now() - started} ms; ` +
        `lifetime ${lifetimeS} s (expires ${new Date(started + grant.lifetimeMs).toISOString()})\n`,
    );
    await dispatchers.close();
    process.exit(0);
  } catch (err) {
    const e = err as { outcome?: string; message: string };
    const message = err instanceof TokenFetchError ? describeTokenFailure(err, config.tokenUrl) : e.message;
    process.stderr.write(`ticket-auth-proxy: check failed: ${e.outcome ?? 'error'}: ${message}\n`);
    process.exit(1);
  }
}

async function main(): Promise<void> {
  let args;
  try {
    args = parseArgs(process.argv.slice(2));
  } catch (err) {
    fail((err as Error).message);
  }
  if (args.command === 'help') {
    process.stdout.write(helpText(VERSION));
    return;
  }
  if (args.command === 'version') {
    process.stdout.write(`${VERSION}\n`);
    return;
  }
  // Variables that look like a misspelt setting: logged once the logger exists, written before it.
  const warnings = settingWarnings(process.env);
  const writeWarnings = (): void => {
    for (const w of warnings) process.stderr.write(`ticket-auth-proxy: warning: ${w.message}\n`);
  };
  let loaded;
  try {
    loaded = await readConfig(args.configFile, { tls: checkNetSettings, token: checkTokenSettings }, process.env);
  } catch (err) {
    writeWarnings();
    if (err instanceof ConfigError) fail(err.message);
    throw err;
  }
  const { config, checked } = loaded;
  if (args.command === 'check') {
    writeWarnings();
    await check(config, checked);
  }

  const log = createLogger(config.logLevel);
  for (const w of warnings) log.warn({ variable: w.variable, setting: w.setting }, w.message);
  process.on('unhandledRejection', (err) => log.error({ err }, 'unhandled rejection'));
  // Signals are handled from before the listeners open: a SIGTERM during start-up still drains.
  const app = startApp({ config, tls: checked.tls, token: checked.token, log, clock: systemClock, random: Math.random, registry: new Registry() });
  app.catch((err: unknown) => {
    log.error({ reason: (err as Error).message }, 'start failed');
    fail((err as Error).message, 1);
  });
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals): void => {
    if (stopping) {
      log.warn({ signal }, 'second signal: exiting at once');
      process.exit(1);
    }
    stopping = true;
    log.info({ signal }, 'signal received');
    app
      .then((started) => started.shutdown())
      .then(
        (status) => process.exit(status),
        (err: unknown) => {
          log.error({ err }, 'shutdown failed');
          process.exit(1);
        },
      );
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
}

void main();
