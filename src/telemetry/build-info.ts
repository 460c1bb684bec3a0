import { Gauge, type Registry } from 'prom-client';

/**
 * `ticket_auth_proxy_build_info{version}`: always 1, its label the proxy's version (the `version`
 * of package.json, which the image's labels and the chart carry too: docs/releases.md, "How
 * versions move"). A dashboard joins on it to tell which release each pod runs.
 */
export function registerBuildInfo(registry: Registry, version: string): void {
  new Gauge({
    name: 'ticket_auth_proxy_build_info',
    help: 'Always 1; the version label is the running release of ticket-auth-proxy',
    labelNames: ['version'],
    registers: [registry],
  }).set({ version }, 1);
}
