#!/usr/bin/env node
import { readFileSync } from 'node:fs';
import { Registry } from 'prom-client';
import { startApp } from './app/app.js';
import { check } from './app/cli/check.js';
import { helpText, parseArgs } from './app/cli/cli.js';
import { readConfig, refusalWarnings, settingWarnings } from './app/cli/read-config.js';
import { CHECKS } from './app/settings-checks.js';
import { systemClock } from './core/clock.js';
import { ConfigError } from './core/errors.js';
import { createLogger } from './core/log.js';
import { functionLibrary } from './store/index.js';

const VERSION = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;

function fail(message: string, status = 2): never {
  process.stderr.write(`ticket-auth-proxy: ${message}\n`);
  process.exit(status);
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
  if (args.command === 'store-functions') {
    process.stdout.write(functionLibrary());
    return;
  }
  // Variables that look like a misspelt setting: logged once the logger exists, written before it.
  const warnings = settingWarnings(process.env);
  const writeWarnings = (): void => {
    for (const w of warnings) process.stderr.write(`ticket-auth-proxy: warning: ${w.message}\n`);
  };
  let loaded;
  try {
    loaded = await readConfig(args.configFile, CHECKS, process.env, {
      socketInUse: args.command === 'check' ? 'left to the caller' : 'problem',
    });
  } catch (err) {
    warnings.push(...refusalWarnings(err));
    writeWarnings();
    if (err instanceof ConfigError) fail(err.message);
    throw err;
  }
  const { config, checked, routes } = loaded;
  warnings.push(...loaded.warnings);
  if (args.command === 'check') {
    writeWarnings();
    process.exit(await check(config, { ...checked, routes }));
  }

  const log = createLogger(config.logLevel);
  for (const w of warnings) log.warn({ variable: w.variable, setting: w.setting }, w.message);
  process.on('unhandledRejection', (err) => log.error({ err }, 'unhandled rejection'));
  // Signals are handled from before the listeners open: a SIGTERM during start-up still drains.
  const app = startApp({
    config,
    tls: checked.tls,
    routes,
    store: checked.store,
    tracing: checked.tracing,
    log,
    clock: systemClock,
    random: Math.random,
    registry: new Registry(),
    version: VERSION,
  });
  app.catch((err: unknown) => {
    log.error({ reason: (err as Error).message }, 'start failed');
    // What is at LISTEN_SOCKET's path is configuration too, examined again as the socket is made.
    fail((err as Error).message, err instanceof ConfigError ? 2 : 1);
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
