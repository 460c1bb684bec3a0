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

/** Every program of tools.list. */
export const TOOLS: Tool[] = readFileSync(join(import.meta.dirname, 'tools.list'), 'utf8')
  .split('\n')
  .filter((line) => line.trim() !== '' && !line.startsWith('#'))
  .map((line) => {
    const [command, pkg, ...need] = line.trim().split(/\s+/);
    return { command: command!, pkg: pkg!, need: need.join(' ') };
  });

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

/** True under CI (`CI=true`), where no test is skipped for want of something on the machine. */
export const inCi = (): boolean => process.env.CI !== undefined && process.env.CI !== '' && process.env.CI !== 'false';

/** True when the tests needing `command` are to be skipped: it is missing and this is not CI. */
export function lacks(command: string): boolean {
  if (inCi()) return false;
  return !onPath(command);
}

/** The reason shown in a skipped test's title, empty when it runs. */
export function skipNote(command: string): string {
  if (!lacks(command)) return '';
  const tool = TOOLS.find((t) => t.command === command);
  return ` [skipped: ${command} is not on PATH; Debian package ${tool?.pkg ?? command}]`;
}

/** One line naming what was skipped and how to install it, or undefined when nothing was. */
export function skipSummary(): string | undefined {
  if (inCi()) return undefined;
  const missing = TOOLS.filter((t) => !onPath(t.command));
  if (missing.length === 0) return undefined;
  const packages = [...new Set(missing.map((t) => t.pkg))];
  const needs = [...new Set(missing.map((t) => t.need))];
  return `Skipped, for want of ${missing.map((t) => t.command).join(', ')} on PATH: ${needs.join('; ')}. To run them: sudo apt-get install ${packages.join(' ')}`;
}
