// npm run worker: a job worker on its own, beside any number of API processes and other
// workers on the same PostgreSQL (DATABASE_URL), that delivers webhooks too. Stops after the
// current chunk on SIGINT/SIGTERM.
import process from "node:process";
import { readConfig } from "../src/config.ts";
import { openPostgresDatabase } from "../src/db/open-postgres.ts";
import { jobRunDeps } from "../src/jobs/deps.ts";
import { createWorker } from "../src/jobs/worker.ts";
import { createLogger } from "../src/observe/log.ts";
import { createNodeOutbound } from "../src/outbound-node.ts";
import { startDelivery } from "../src/webhooks/deliver.ts";

async function main(): Promise<void> {
  const config = readConfig(process.env);
  if (!config.databaseUrl) {
    throw new Error(
      "Cannot start a worker without DATABASE_URL: the embedded database opens in one process only, and `npm start` already runs a worker inside it",
    );
  }
  const logger = createLogger({ level: config.logLevel, format: config.logFormat, write: (text) => void process.stdout.write(text) });
  const log = logger.log;
  process.on("exit", () => logger.flush());
  // PostgreSQL only, opened without openDatabase (src/db/open.ts) so the embedded driver is never bundled
  // the last resort: nothing that slips past its caller (a driver's stray rejection) ends the worker
  const describe = (reason: unknown) => (reason instanceof Error ? (reason.stack ?? reason.message) : String(reason));
  process.on("unhandledRejection", (reason) => log(`Kept working after an unhandled rejection: ${describe(reason)}`, "error"));
  process.on("uncaughtException", (err) => log(`Kept working after an uncaught exception: ${describe(err)}`, "error"));
  // three: a chunk written, the next one resolved, and reverse_entries refreshed behind them (and
  // one more of postgres.js's own, opened by worker.start(), listening for submissions: on
  // DATABASE_DIRECT_URL behind a pooler, and none there without it)
  const db = await openPostgresDatabase(config.databaseUrl, {
    max: 3,
    timeouts: config.databaseTimeouts,
    directUrl: config.databaseDirectUrl,
  }, config.databasePooler);
  const worker = createWorker(jobRunDeps(config, { db, now: () => new Date(), log }));
  await worker.start();
  // webhook deliveries too, sharing the claims with the servers (src/webhooks/deliver.ts)
  const outbound = createNodeOutbound(config.outbound);
  const delivery = await startDelivery({ db, config, now: () => new Date(), log, outbound });
  log(`walletid job worker ${worker.owner} started`);
  let stopping = false;
  const shutdown = async () => {
    if (stopping) return;
    stopping = true;
    await worker.stop();
    await delivery?.stop();
    await outbound.close();
    await db.close();
    logger.flush();
    process.exit(0);
  };
  process.on("SIGINT", shutdown);
  process.on("SIGTERM", shutdown);
}

main().catch((err: Error) => {
  console.error(err.message.startsWith("Cannot") ? err.message : `Cannot start the worker: ${err.message}`);
  process.exit(1);
});
