# walletid on PostgreSQL: docker build -t walletid . && docker run -e DATABASE_URL=postgres://... -p 8787:8787 walletid
# Stage 1 installs the runtime dependencies only (tsx is one: the server runs its TypeScript as is).
# Node 26, the Active LTS line since October 2026
FROM node:26-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
# postinstall fixes two bugs of postgres.js in node_modules (docs/development.md, "postgres.js patched at install")
COPY scripts/patch-postgres.mjs ./scripts/
RUN npm ci --omit=dev --no-audit --no-fund

# Stage 2 is the image: node_modules from stage 1 and the sources, run as the unprivileged `node` user.
FROM node:26-slim
# REQUIRE_DATABASE_URL: the image holds no embedded database (nor a writable data directory), so
# a start without DATABASE_URL stops with one line saying to set it
ENV NODE_ENV=production PORT=8787 HOST=0.0.0.0 REQUIRE_DATABASE_URL=1
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY package.json tsconfig.json ./
COPY src ./src
COPY sql ./sql
COPY scripts ./scripts
USER node
EXPOSE 8787
# /healthz runs a statement on the database: 200 when it answers, 503 when it does not
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s \
  CMD node -e "fetch('http://127.0.0.1:'+(process.env.PORT||8787)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
CMD ["node", "--min-semi-space-size=16", "--import", "tsx", "src/main.ts"]
