# syntax=docker/dockerfile:1
#
# One image for every Waybill service: the SERVICES variable picks what a container runs.
#
#   docker build -t waybill:local .
#   docker run --rm -e SERVICES=gateway -p 3000:3000 waybill:local
#
# The same image carries the operator CLI: `node dist/bin/waybill.js --help`.

# ---- build: all dependencies, TypeScript -> dist/ ----
FROM node:24-bookworm-slim AS build
WORKDIR /app
ENV SCARF_ANALYTICS=false
COPY package.json package-lock.json ./
RUN --mount=type=cache,target=/root/.npm npm ci --no-audit --no-fund
# Everything tsconfig.build.json compiles (its "include"), and the configs it extends.
COPY tsconfig.json tsconfig.build.json moleculer.config.ts ./
COPY bin ./bin
COPY libs ./libs
COPY services ./services
RUN npm run build

# ---- runtime: production dependencies and dist/ only, non-root ----
FROM node:24-bookworm-slim AS runtime
# UV_THREADPOOL_SIZE: libuv's threads for DNS lookups, file reads and hashing (4 by default); a
# webhook owner's names that never resolve hold two of them at most (decision 129).
ENV NODE_ENV=production \
    SCARF_ANALYTICS=false \
    UV_THREADPOOL_SIZE=16
WORKDIR /app
COPY package.json package-lock.json ./
RUN --mount=type=cache,target=/root/.npm npm ci --omit=dev --no-audit --no-fund
COPY --from=build /app/dist ./dist
# Files stay owned by root: the app user can read, not modify, its own code.
USER node
# 3000: HTTP API (gateway only). 9464: /health/live, /health/ready, /metrics (every process).
EXPOSE 3000 9464
# Slim images have no curl/wget: probe with node. OPS_PORT=0 disables the endpoint (and this check).
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD ["node", "-e", "const port = process.env.OPS_PORT || '9464'; if (port === '0') process.exit(0); require('node:http').get('http://127.0.0.1:' + port + '/health/live', (r) => process.exit(r.statusCode === 200 ? 0 : 1)).on('error', () => process.exit(1))"]
CMD ["node", "dist/bin/server.js"]
