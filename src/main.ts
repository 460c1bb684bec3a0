#!/usr/bin/env node
import { readFileSync } from 'node:fs';
import { Registry } from 'prom-client';
import { startApp } from './app/app.js';
import { helpText, parseArgs } from './app/cli.js';
import { systemClock } from './core/clock.js';
import { loadConfig, type Config } from './config/config.js';
import { ConfigError, TokenFetchError } from './core/errors.js';
import { createLogger } from './core/log.js';
import { createDispatchers } from './net/dispatchers.js';
import { readTlsMaterial } from './net/tls-files.js';
import { configuredCredential } from './token/configured-credential.js';
import { describeTokenFailure } from './token/diagnose.js';
import { tokenFetcherFromConfig } from './token/fetch-token.js';

const VERSION = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;

function fail(message: string, status = 2): never {
  process.stderr.write(`ticket-auth-proxy: ${message}\n`);
  process.exit(status);
}

/** Reads the configuration; `yaml` is loaded only when a file is named (it costs memory otherwise unused). */
async function readConfig(configFile: string | undefined): Promise<Config> {
  const path = configFile ?? process.env.CONFIG_FILE;
  let file: { path: string; values: unknown } | undefined;
  if (path !== undefined && path !== '') {
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (err) {
      fail(`invalid configuration:\n  - ${configFile !== undefined ? '--config' : 'CONFIG_FILE'} names a file that cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'}): ${path}`);
    }
    const { parse: parseYaml } = await import('yaml');
    try {
      file = { path, values: parseYaml(text) };
    } catch (err) {
      fail(`invalid configuration:\n  - ${path} is not valid YAML (${(err as Error).message.split('\n')[0]})`);
    }
  }
  try {
    return loadConfig({ env: process.env, file, readSecretFile: (p) => readFileSync(p, 'utf8') });
  } catch (err) {
    if (err instanceof ConfigError) fail(err.message);
    throw err;
  }
}

/** `check`: one token fetch, its lifetime printed (never the token), exit 0 or 1 (PRODUCT §2). */
async function check(config: Config): Promise<never> {
  const auth = configuredCredential(config, { clock: systemClock, log: createLogger('silent') });
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
    tls: readTlsMaterial(config),
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
  const config = await readConfig(args.configFile);
  if (args.command === 'check') await check(config);

  const log = createLogger(config.logLevel);
  process.on('unhandledRejection', (err) => log.error({ err }, 'unhandled rejection'));
  // Signals are handled from before the listeners open: a SIGTERM during start-up still drains.
  const app = startApp({ config, log, clock: systemClock, random: Math.random, registry: new Registry() });
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
