# One image for the API, the dispatcher, the one-shot migrate and the operator CLI; the command
# picks the process (docs/operations.md "Container image"):
#   node --max-semi-space-size=4 --heap-growing-percent=50 apps/api/dist/main.js   the API on PORT (the default command)
#   node --max-semi-space-size=8 --heap-growing-percent=50 apps/dispatcher/dist/main.js   the webhook dispatcher, its health routes on DISPATCHER_PORT
# (the flags, and MALLOC_ARENA_MAX in the final stage's ENV: libs/runtime/src/NodeFlags.ts)
#   node apps/cli/src/migrate.ts       applies the pending migrations to DATABASE_URL and exits
#   node apps/cli/src/main.ts …        the operator CLI against DATABASE_URL (schools create, keys create…)
# The API and the dispatcher run as bundles of plain JavaScript, built in a stage of their own
# (apps/cli/src/build.ts; why: docs/decisions.md "Compiled processes"); migrate and the CLI run
# their TypeScript sources directly (Node 24's type stripping). test/ops checks this file and
# replays it.

# Stage 1: production dependencies. Every workspace's package.json (package.json "workspaces") is
# copied before npm ci: npm silently skips a workspace whose folder is missing, and the image would
# then lack its node_modules/@school link. --omit=optional leaves out the embedded PostgreSQL
# (package.json "optionalDependencies", about 60 MB of binaries) that only `npm start` and the
# tests use: every process of the image works against DATABASE_URL.
FROM node:24-slim AS dependencies
WORKDIR /app
COPY package.json package-lock.json ./
COPY libs/domain/package.json libs/domain/
COPY libs/persistence/package.json libs/persistence/
COPY libs/runtime/package.json libs/runtime/
COPY libs/local-postgres/package.json libs/local-postgres/
COPY libs/client/package.json libs/client/
COPY apps/api/package.json apps/api/
COPY apps/dispatcher/package.json apps/dispatcher/
COPY apps/cli/package.json apps/cli/
COPY test/package.json test/
RUN npm ci --omit=dev --omit=optional --no-audit --no-fund

# Stage 2: the bundles, on top of stage 1 (its package files). The build tool (rolldown) is a
# devDependency, so this stage installs everything, without install scripts (none is needed to
# bundle); none of it reaches the image but the two dist/ directories.
FROM dependencies AS build
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY libs libs
COPY apps apps
RUN node apps/cli/src/build.ts

# Stage 3: what runs. The files belong to root; the processes run as the unprivileged `node` user
# of the base image and write nothing (logs go to stderr). NODE_ENV=production: the API and the
# dispatcher refuse to start without WEBHOOK_SECRET_KEY (docs/operations.md "Settings").
# MALLOC_ARENA_MAX=2: glibc's malloc arenas, read at process start (libs/runtime/src/NodeFlags.ts).
FROM node:24-slim
WORKDIR /app
ENV NODE_ENV=production HOST=0.0.0.0 PORT=3000 DISPATCHER_PORT=3001 LOG_FORMAT=json MALLOC_ARENA_MAX=2
COPY package.json ./
COPY --from=dependencies /app/node_modules node_modules
COPY libs libs
COPY apps apps
COPY --from=build /app/apps/api/dist apps/api/dist
COPY --from=build /app/apps/dispatcher/dist apps/dispatcher/dist
USER node
EXPOSE 3000 3001
CMD ["node", "--max-semi-space-size=4", "--heap-growing-percent=50", "apps/api/dist/main.js"]
