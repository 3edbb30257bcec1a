# syntax=docker/dockerfile:1
# The tool-dispatch coordinator (HTTP API, passes 1 and 3). Build from the repository root:
#   docker build -f deploy/docker/coordinator.Dockerfile -t tool-dispatch-coordinator .
# coordinator.Dockerfile.dockerignore beside this file keeps node_modules and dist out of the context.
ARG NODE_IMAGE=node:20-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /app
ENV CI=true
RUN npm install -g pnpm@12.4.2
# Manifests first, so the dependency layer is rebuilt only when they change. Every workspace
# package's package.json is needed for --frozen-lockfile (test/deploy.test.ts checks the list).
COPY package.json pnpm-lock.yaml pnpm-workspace.yaml ./
COPY packages/shared/package.json packages/shared/
COPY packages/coordinator/package.json packages/coordinator/
COPY packages/worker/package.json packages/worker/
COPY packages/client/package.json packages/client/
RUN pnpm install --frozen-lockfile
COPY . .
RUN pnpm build \
  && pnpm install --frozen-lockfile --prod --offline

FROM ${NODE_IMAGE} AS runtime
# tini reaps orphaned children and forwards SIGTERM, on which the coordinator drains its rounds.
RUN apt-get update \
  && apt-get install -y --no-install-recommends tini ca-certificates \
  && rm -rf /var/lib/apt/lists/*
WORKDIR /app
ENV NODE_ENV=production \
    PORT=8080 \
    TD_WORKSPACE_ROOT=/data/workspaces
COPY --from=build --chown=node:node /app /app
RUN mkdir -p /data/workspaces && chown node:node /data/workspaces
USER node
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
ENTRYPOINT ["/usr/bin/tini", "--", "/app/bin/tool-dispatch"]
CMD ["coordinator"]
