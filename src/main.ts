#!/usr/bin/env node
import { readFileSync } from 'node:fs';
import { Registry } from 'prom-client';
import { startApp } from './app/app.js';
import { check } from './app/check.js';
import { helpText, parseArgs } from './app/cli.js';
import { systemClock } from './core/clock.js';
import { loadConfig, type Config } from './config/config.js';
import { ConfigError } from './core/errors.js';
import { createLogger } from './core/log.js';

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
  if (args.command === 'check') process.exit(await check(config));

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
