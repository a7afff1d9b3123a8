# syntax=docker/dockerfile:1
# Multi-stage: build with dev dependencies, run with production dependencies only, as a non-root user.

FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# Scripts run after the sources are there (prepare generates the Prisma client and compiles).
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json prisma.config.ts codegen.yml ./
COPY prisma ./prisma
COPY schema ./schema
COPY src ./src
RUN npm run db:generate && npm run build

FROM node:24-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund

FROM node:24-bookworm-slim
ENV NODE_ENV=production \
    SCHOOL_DATA_ENV=production \
    HOST=0.0.0.0 \
    PORT=4000
WORKDIR /app
COPY --from=deps --chown=node:node /app/node_modules ./node_modules
COPY --from=build --chown=node:node /app/dist ./dist
COPY --chown=node:node package.json ./
COPY --chown=node:node bin ./bin
COPY --chown=node:node prisma ./prisma
COPY --chown=node:node schema ./schema
# GraphiQL's page (served only outside production, e.g. SCHOOL_DATA_ENV=sandbox).
COPY --chown=node:node static ./static
USER node
EXPOSE 4000
HEALTHCHECK --interval=15s --timeout=3s --start-period=10s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:'+(process.env.PORT||4000)+'/health').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
# Migrations are their own step, run once per release before the new servers start:
#   docker run --rm -e DATABASE_URL=... IMAGE node bin/school-data.js migrate
# Node's options for the server: src/server-flags.ts.
CMD ["node", "--max-semi-space-size=8", "--max-old-space-size=512", "bin/school-data.js", "serve"]
