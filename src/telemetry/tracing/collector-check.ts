/**
 * What `check` says of tracing when a collector is named: where spans go and how they are sampled,
 * then whether the collector takes an export, tried with one empty export (an
 * `ExportTraceServiceRequest` of no span, which a collector answers as any other). A collector
 * that does not take it is a warning with what to change, never a failure of `check`: the proxy
 * runs without its spans (they are dropped and counted).
 */
import type { Dispatcher } from 'undici';
import { exportFailure, postExport } from './collector-export.js';
import type { TracingSettings } from './settings.js';

/** The sampler as the start line and `check` name it: with its ratio when it has one. */
export function describeSampler(settings: Pick<TracingSettings, 'sampler' | 'ratio'>): string {
  return settings.sampler.endsWith('traceidratio') ? `${settings.sampler} (ratio ${settings.ratio})` : settings.sampler;
}

/** The lines `check` prints of tracing: `stdout` where spans go and the answer, `stderr` a warning when the export failed. */
export async function checkCollector(settings: TracingSettings, dispatcher: Dispatcher): Promise<{ stdout: string; stderr: string }> {
  const { url } = settings;
  const where = `tracing: spans go to ${url.origin}${url.pathname}, sampled ${describeSampler(settings)}`;
  const outcome = await postExport(url, settings.headers, dispatcher, new Uint8Array(0));
  if (outcome.ok) return { stdout: `${where}; the collector took an empty export (${outcome.status})\n`, stderr: '' };
  const { reason, hint } = exportFailure(url, outcome);
  return {
    stdout: `${where}\n`,
    stderr:
      `ticket-auth-proxy: warning: the collector did not take an empty export: ${reason}` +
      `${hint === undefined ? '' : `; ${hint}`}; the proxy runs without it, dropping and counting its spans\n`,
  };
}
