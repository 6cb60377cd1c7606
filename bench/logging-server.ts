// The server of the bench's logging comparison (bench/lookup.ts): one process serving the real app
// twice, on PORT with the access log (LOG_LEVEL=info, to stdout) and request metrics on, and on
// QUIET_PORT with both off (LOG_LEVEL=silent, METRICS=off), each app with its own database pool,
// built by createApp as src/main.ts builds it on Node (without the peer address and Node's gzip,
// which the compared GET /wallet never uses). Two configurations in one process, because processes
// started alike differ by up to 14% in CPU per request for their whole life: compared within one
// process, that difference falls on both alike. The app created first serves faster: with both
// configured alike, the second answered 0.92-1.00 of the first's requests a second in seven
// processes. FIRST (observed or quiet) says which is created first; the bench gives half its
// processes each order.
import process from "node:process";
import { serve } from "@hono/node-server";
import { readConfig, type Config } from "../src/config.ts";
import { createApp, type App } from "../src/app.ts";
import { openDatabase } from "../src/db/open.ts";
import type { Db } from "../src/db/types.ts";
import { useBodySource } from "../src/http/body.ts";
import { readNodeBody, rememberIncoming } from "../src/node-body.ts";
import { createLogger, type Logger } from "../src/observe/log.ts";
import { configuredSources } from "../src/sources/index.ts";

interface Served {
  app: App;
  db: Db;
  logger: Logger;
  close: () => Promise<void>;
}

async function serveApp(config: Config, port: number): Promise<Served> {
  const logger = createLogger({ level: config.logLevel, format: config.logFormat, write: (text) => void process.stdout.write(text) });
  const db = await openDatabase({ databaseUrl: config.databaseUrl, max: config.databasePoolSize, timeouts: config.databaseTimeouts, lane: true });
  const app = createApp({
    db,
    config,
    now: () => new Date(),
    log: logger.log,
    logger,
    sources: configuredSources(config, logger.log),
  });
  const fetch = async (req: Request, env?: unknown) => {
    rememberIncoming(req, env);
    return await app.fetch(req, env);
  };
  const server = serve({ fetch, port, hostname: config.host });
  await new Promise<void>((resolve) => server.once("listening", () => resolve()));
  return { app, db, logger, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

async function main(): Promise<void> {
  const base = readConfig(process.env);
  const quietPort = Number(process.env.QUIET_PORT);
  if (!base.databaseUrl) throw new Error("Cannot start the logging server: DATABASE_URL is not set");
  if (!Number.isInteger(quietPort) || quietPort <= 0) throw new Error("Cannot start the logging server: QUIET_PORT is not set");
  const first = process.env.FIRST ?? "quiet";
  if (first !== "observed" && first !== "quiet") throw new Error("Cannot start the logging server: FIRST is observed or quiet");
  useBodySource(readNodeBody);
  const serveQuiet = () => serveApp({ ...base, logLevel: "silent", metrics: false }, quietPort);
  const serveObserved = () => serveApp({ ...base, logLevel: "info", metrics: true }, base.port);
  let quiet: Served;
  let observed: Served;
  if (first === "quiet") {
    quiet = await serveQuiet();
    observed = await serveObserved();
  } else {
    observed = await serveObserved();
    quiet = await serveQuiet();
  }
  observed.logger.log(`walletid bench logging server: access log and metrics on ${base.port}, off on ${quietPort}, ${first} created first`);

  const shutdown = async () => {
    for (const s of [observed, quiet]) {
      await s.close();
      await s.app.close();
      await s.db.close();
      s.logger.flush();
    }
    process.exit(0);
  };
  process.once("SIGINT", shutdown);
  process.once("SIGTERM", shutdown);
}

main().catch((err: Error) => {
  console.error(err.message.startsWith("Cannot") ? err.message : `Cannot start the logging server: ${err.message}`);
  process.exit(1);
});
