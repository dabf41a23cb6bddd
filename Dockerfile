# One image for every toolmesh service; docker-compose.yml picks the service with SERVICE.
FROM node:20-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production TOOLMESH_HOST=0.0.0.0 TOOLMESH_DATA_DIR=/data
COPY package.json package-lock.json tsconfig.json ./
COPY libs ./libs
COPY services ./services
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm install --no-save --ignore-scripts tsx@4
RUN mkdir -p /data && chown node:node /data
USER node
ENV SERVICE=registry
CMD ["sh", "-c", "exec node --import tsx services/$SERVICE/src/main.ts"]
