# One image for every toolmesh service; docker-compose.yml picks the service with SERVICE (and runs
# dist/bus-init.mjs once first: the bus's nkeys and nats-server config in the data volume).
# The build stage type-checks the sources with tsc and bundles each service into plain
# JavaScript, dist/<service>.mjs (npm run build); the image runs those with Node alone.
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY . .
# --ignore-scripts also skips the download of the pinned `node` devDependency (and its bin link):
# the image's own Node 24 runs the build.
RUN npm ci --ignore-scripts --no-audit --no-fund
# The console's web app is built too and served from dist/web by dist/console.mjs.
RUN npm run typecheck && npm run build && npm run build:console \
  && cp -r services/console/dist/web dist/web

FROM node:24-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production TOOLMESH_HOST=0.0.0.0 TOOLMESH_DATA_DIR=/data
# Only the npm packages the bundles import; the workspace code is inside the bundles.
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist ./dist
RUN mkdir -p /data && chown node:node /data
USER node
ENV SERVICE=registry
# The V8 flags and environment npm start gives every service (SERVICE_NODE_FLAGS and SERVICE_ENV
# in libs/launcher/src/bundles.ts).
ENV NODE_OPTIONS=--max-semi-space-size=8
ENV MALLOC_ARENA_MAX=2
CMD ["sh", "-c", "exec node dist/$SERVICE.mjs"]
