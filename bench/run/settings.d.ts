// The types of settings.js, for the unit tests that import it.

export interface Setting {
  name: string;
  key?: string;
  default: string | (() => string);
  meaning: string | (() => string);
  read?: (raw: string | undefined, context: { env: Record<string, string | undefined>; host: Host }) => unknown;
}

/** What the defaults depend on. */
export interface Host {
  hasProgram(name: string): boolean;
  processors: number;
  exists(path: string): boolean;
  imageNodeOptions(): string;
  imageAllocatorEnv(env: Record<string, string | undefined>): { env: Record<string, string>; description: string };
}

export interface Settings {
  durationS: number;
  rounds: number;
  warmupS: number;
  scenarios: string[];
  load: 'wrk' | 'autocannon';
  upstream: 'nginx' | 'node';
  nodeFlags: string[];
  productNodeOptions: string;
  productAllocator: { env: Record<string, string>; description: string };
  profile: boolean;
  beforeMain: string | undefined;
  beforeEnv: Record<string, string>;
  pin: boolean;
}

export const SETTINGS: readonly Setting[];
export function readSettings(env: Record<string, string | undefined>, host: Host): Readonly<Settings>;
export function thisHost(): Host;
export function settingsMarkdown(): string;
export function settingsHelp(): string;
