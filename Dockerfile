# One image for the API, the dispatcher and the one-shot migrate; the command picks the process.
# Node 24 runs the TypeScript sources directly (type stripping), so there is no build step.
FROM node:24-slim
WORKDIR /app
ENV NODE_ENV=production HOST=0.0.0.0 PORT=3000 LOG_FORMAT=json
COPY package.json package-lock.json ./
COPY libs/domain/package.json libs/domain/
COPY libs/persistence/package.json libs/persistence/
COPY apps/api/package.json apps/api/
COPY apps/dispatcher/package.json apps/dispatcher/
COPY apps/cli/package.json apps/cli/
COPY test/package.json test/
RUN npm ci --omit=dev --no-audit --no-fund
COPY libs libs
COPY apps apps
USER node
EXPOSE 3000
CMD ["node", "apps/api/src/main.ts"]
