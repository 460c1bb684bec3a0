# syntax=docker/dockerfile:1
# ticket-auth-proxy: the authenticating sidecar for the Ticket Service.
#   docker build -t ticket-auth-proxy .
# NODE_IMAGE names the Node.js base of both stages (the current LTS).
ARG NODE_IMAGE=node:24-slim

# --- build: dev dependencies, TypeScript to dist/ -------------------------------------------------
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY scripts/bundle.mjs ./scripts/
COPY src ./src
RUN npm run build

# --- production dependencies only ----------------------------------------------------------------
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

# --- runtime ------------------------------------------------------------------------------------
FROM ${NODE_IMAGE}
ARG VERSION=0.1.0
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
RUN apt-get update \
    && apt-get install -y --no-install-recommends libjemalloc2 \
    && rm -rf /var/lib/apt/lists/*
# NODE_OPTIONS caps V8's young generation: without it, on a large host, it grows to 128 MB under
# load (bench/README.md). --expose-gc gives the proxy V8's collector for the young-generation
# collection its read budget runs (docs/performance.md, "Memory under large bodies"); without it
# the proxy takes the collector from a V8 context of its own, which costs a few per cent of CPU.
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
# A numeric user: the kubelet can check runAsNonRoot only against a uid.
USER 65532:65532
EXPOSE 8180 8181
# Exec form: node is PID 1 and handles SIGTERM itself (docs/operations.md, "Shutdown").
CMD ["node", "dist/main.js"]
