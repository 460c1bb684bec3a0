import pino, { type DestinationStream, type Logger } from 'pino';

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

/** The part of a logger the proxy's parts use; pino's `Logger` fits it, and so does a test fake. */
export interface Log {
  error(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
  debug(obj: object, msg: string): void;
}

/**
 * Paths pino censors wherever they appear one or two levels deep (docs/operations.md, "Logs"). The proxy never
 * logs a token or a secret on purpose; this is the second line of defence.
 */
export const REDACT_PATHS = [
  'authorization',
  'proxy-authorization',
  'cookie',
  'set-cookie',
  'client_secret',
  'clientSecret',
  'access_token',
  'accessToken',
  'token',
  'password',
  'tokenStorePassword',
  '*.authorization',
  '*["proxy-authorization"]',
  '*.cookie',
  '*["set-cookie"]',
  '*.client_secret',
  '*.clientSecret',
  '*.access_token',
  '*.accessToken',
  '*.token',
  '*.password',
  '*.tokenStorePassword',
  'headers.authorization',
  '*.headers.authorization',
  '*.headers["proxy-authorization"]',
  '*.headers.cookie',
  '*.headers["set-cookie"]',
];

/** Creates the process logger: JSON lines on stdout (or `destination`), with redaction. */
export function createLogger(level: LogLevel, destination?: DestinationStream): Logger {
  return pino(
    {
      name: 'ticket-auth-proxy',
      level,
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      formatters: { level: (label, number) => ({ level: number, levelName: label }) },
    },
    destination ?? pino.destination({ dest: 1, sync: true }),
  );
}
