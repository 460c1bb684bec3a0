# syntax=docker/dockerfile:1
# check=skip=RedundantTargetPlatform
# ticket-auth-proxy: the authenticating sidecar for the Ticket Service.
#   docker build -t ticket-auth-proxy .
#   docker buildx build --platform linux/amd64,linux/arm64 -t ticket-auth-proxy .
# Two bases, each named once, by tag (Renovate pins and moves their digests: docs/releases.md,
# "Base images and actions"):
# NODE_IMAGE, the build stages' base, has npm and apt; it is Node's current LTS on the same Debian
# release as the runtime base, so that the jemalloc taken from that release matches its C library.
ARG NODE_IMAGE=node:24-bookworm-slim
# RUNTIME_IMAGE, the runtime layer's base, holds Node and the C and C++ libraries it needs, and no
# package manager, no npm and no shell; its entrypoint is node; :nonroot runs as uid 65532.
ARG RUNTIME_IMAGE=gcr.io/distroless/nodejs24-debian12:nonroot

# The build stages run on the machine's own platform ($BUILDPLATFORM): the proxy has no native
# addon, so node_modules and dist/ are the same on every architecture, and an arm64 image needs no
# emulated npm. Only jemalloc is taken for the target architecture ($TARGETARCH). The stages on
# the runtime base name $TARGETPLATFORM, BuildKit's default, because Debian 12's buildah (the
# checks of docs/releases.md, "Checking a release here") otherwise keeps the platform of the
# build stage built last (the check line above lets BuildKit accept the repetition).

# --- build: dev dependencies, TypeScript to dist/, the npm part of the SBOM ---------------------
FROM --platform=$BUILDPLATFORM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY scripts/bundle.mjs scripts/sbom.mjs ./scripts/
COPY src ./src
RUN npm run build && npm run sbom -- /sbom/npm.cdx.json

# --- production dependencies only ----------------------------------------------------------------
FROM --platform=$BUILDPLATFORM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

# --- jemalloc of the target architecture, from the build base's Debian release --------------------
# Downloaded and unpacked, not installed: nothing runs on the target architecture. Its package's
# control fields go where the runtime base lists its packages (/var/lib/dpkg/status.d), so that the
# SBOM and image scanners see it.
FROM --platform=$BUILDPLATFORM ${NODE_IMAGE} AS jemalloc
ARG TARGETARCH
WORKDIR /jemalloc
RUN dpkg --add-architecture "${TARGETARCH}" \
    && apt-get update \
    && apt-get download "libjemalloc2:${TARGETARCH}" \
    && dpkg-deb -x libjemalloc2_*.deb unpacked \
    && mkdir -p out/usr/lib out/var/lib/dpkg/status.d \
    && cp -L unpacked/usr/lib/*/libjemalloc.so.2 out/usr/lib/libjemalloc.so.2 \
    && dpkg-deb -f libjemalloc2_*.deb >out/var/lib/dpkg/status.d/libjemalloc2 \
    && rm -rf /var/lib/apt/lists/*

# --- the runtime base's package list -------------------------------------------------------------
# Its files are only read (COPY --from), so nothing of it runs here.
FROM --platform=$TARGETPLATFORM ${RUNTIME_IMAGE} AS runtime-base

# --- the SBOM of the runtime image: the npm packages and the Debian packages -----------------------
FROM --platform=$BUILDPLATFORM ${NODE_IMAGE} AS sbom
WORKDIR /sbom
COPY --from=build /sbom/npm.cdx.json ./
COPY scripts/sbom-image.mjs ./
COPY --from=runtime-base /var/lib/dpkg/status.d ./status.d
COPY --from=jemalloc /jemalloc/out/var/lib/dpkg/status.d ./status.d
RUN node sbom-image.mjs npm.cdx.json status.d sbom.cdx.json

# --- runtime ------------------------------------------------------------------------------------
FROM --platform=$TARGETPLATFORM ${RUNTIME_IMAGE}
ARG VERSION=0.1.1-dev
LABEL org.opencontainers.image.title="ticket-auth-proxy" \
      org.opencontainers.image.description="Authenticating sidecar: obtains and refreshes an OAuth 2.0 client-credentials token and forwards local calls to the Ticket Service with it." \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.source="https://github.com/ticket-auth-proxy/ticket-auth-proxy"
# jemalloc gives memory freed after a burst back to the system within seconds, where glibc's
# malloc keeps it in per-thread arenas (bench/BASELINE.md, "Footprint"): one arena, no thread
# caches, freed pages returned to the system within a second, so that memory falls as soon as a
# burst is over and shedding near the limit ends with it (docs/operations.md, "When memory runs
# short"). Since the read budget frees socket buffers every few megabytes, the pages are reused
# before they would be purged and the short decay costs no CPU the benchmark can see; it cost
# 4-6 % when V8 freed them 64 MB at a time (bench/BASELINE.md, "Where the memory goes under large
# bodies").
# lg_extent_max_active_fit:10 lets a socket's 64 KB read buffer be cut from a large freed extent;
# without it jemalloc returned those extents to the system and took fresh pages for every read, a
# page fault each (about 15 % more CPU per request with 64 KB and 1 MB bodies).
# It lives at one path on every architecture, /usr/lib/libjemalloc.so.2 (Debian's package puts it
# under /usr/lib/<multiarch triplet>/): the dynamic linker searches /usr/lib on every Debian
# architecture, so LD_PRELOAD names it as a host with Debian's libjemalloc2 does.
COPY --from=jemalloc /jemalloc/out/ /
# NODE_OPTIONS caps V8's young generation: without it, on a large host, it grows to 128 MB under
# load (bench/README.md). --expose-gc gives the proxy V8's collector for the young-generation
# collection its read budget runs (docs/performance.md, "Memory under large bodies"); without it
# the proxy runs no read budget and leaves memory to V8 alone, which costs uploads more CPU and
# memory (docs/performance.md, "What the read budget costs").
# The proxy writes nothing to disk, so a read-only root filesystem works.
ENV NODE_ENV=production \
    NODE_OPTIONS="--max-semi-space-size=16 --expose-gc" \
    LD_PRELOAD=libjemalloc.so.2 \
    MALLOC_CONF=narenas:1,tcache:false,dirty_decay_ms:1000,muzzy_decay_ms:0,lg_extent_max_active_fit:10
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
COPY config ./config
# What the image holds, as CycloneDX 1.6 JSON (docs/releases.md, "The SBOM").
COPY --from=sbom /sbom/sbom.cdx.json ./sbom.cdx.json
# A numeric user: the kubelet can check runAsNonRoot only against a uid.
USER 65532:65532
EXPOSE 8180 8181
# Exec form, run by the base's entrypoint (node): node is PID 1 and handles SIGTERM itself
# (docs/operations.md, "Shutdown").
CMD ["dist/main.js"]
