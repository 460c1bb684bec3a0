// podman, as the pod check runs it: Debian's podman 4.3 with the containers.conf that
// scripts/pod-check.sh writes and names in CONTAINERS_CONF (runc, explicit ulimits), its storage in
// the check's temporary folder (the one buildah built the image into), vfs.
import { spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';

/**
 * Node in the proxy's image: the runtime base's (a distroless Node base) at /nodejs/bin/node, its
 * entrypoint, and on no PATH: the image has no shell to look one up with.
 */
export const IMAGE_NODE = '/nodejs/bin/node';

/** A podman of the check's own in `work`; `run(args)` returns stdout, throwing with stderr on failure. */
export function createPodman(work) {
  const global = ['--root', join(work, 'storage'), '--runroot', join(work, 'run'), '--storage-driver', 'vfs'];
  const result = (args) => spawnSync('podman', [...global, ...args], { encoding: 'utf8', maxBuffer: 64 << 20 });
  return {
    /** Runs podman; stdout, or a thrown Error with podman's words. */
    run(args) {
      const r = result(args);
      if (r.status !== 0) throw new Error(`podman ${args.join(' ')} failed (${r.status}): ${(r.stderr || r.error?.message || '').trim()}`);
      return r.stdout;
    },
    /** Runs podman; its status, stdout and stderr, whatever they are. */
    try: (args) => result(args),
    /** Starts podman without waiting; the child process. */
    spawn: (args) => spawn('podman', [...global, ...args], { stdio: ['ignore', 'pipe', 'pipe'] }),
    /** `node -e program args…` in `container`, with `options.user`; the JSON line it prints. */
    node(container, program, args = [], options = {}) {
      const user = options.user === undefined ? [] : ['--user', options.user];
      const r = result(['exec', ...user, container, IMAGE_NODE, '-e', program, ...args]);
      const line = r.stdout.trim().split('\n').at(-1) ?? '';
      try {
        return JSON.parse(line);
      } catch {
        throw new Error(`node -e in ${container} printed no JSON (exit ${r.status}): ${r.stdout}${r.stderr}`);
      }
    },
  };
}
