/**
 * `node:http` loaded with require() rather than `import`. An ES module import of a built-in reads
 * every export, and `http.WebSocket`, `CloseEvent` and `MessageEvent` are lazy getters that load
 * Node's own bundled copy of undici and the web streams: about 12 MB resident in every proxy for
 * classes it never uses (docs/performance.md, "What a pod pays for the sidecar"). require() reads only what is asked for.
 */
import type * as Http from 'node:http';
import { createRequire } from 'node:module';

const http = createRequire(import.meta.url)('node:http') as typeof Http;

export const { createServer, STATUS_CODES } = http;
