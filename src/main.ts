// Entry point: picks Deno.serve, Bun.serve or @hono/node-server; nothing else is runtime-specific.
import { join } from "node:path";
import process from "node:process";
import { readConfig, type Config } from "./config.ts";
import { createApp } from "./app.ts";
import { openDatabase } from "./db/open.ts";
import { acquireDataDirLock } from "./db/datadir-lock.ts";
import { ensureDemo } from "./index/demo.ts";
import { configuredSources } from "./sources/index.ts";
import { jobRunDeps } from "./jobs/deps.ts";
import { createWorker } from "./jobs/worker.ts";

type Stop = () => Promise<void>;

async function serve(fetch: (req: Request) => Promise<Response>, config: Config): Promise<Stop> {
  const g = globalThis as { Deno?: any; Bun?: any };
  if (g.Deno) {
    const server = g.Deno.serve({ port: config.port, hostname: config.host, onListen: () => {} }, fetch);
    return () => server.shutdown();
  }
  if (g.Bun) {
    const server = g.Bun.serve({ port: config.port, hostname: config.host, fetch });
    return async () => server.stop();
  }
  const { serve: nodeServe } = await import("@hono/node-server");
  const server = nodeServe({ fetch, port: config.port, hostname: config.host });
  await new Promise<void>((resolve) => server.once("listening", () => resolve()));
  return () => new Promise<void>((resolve) => server.close(() => resolve()));
}

async function main(): Promise<void> {
  const config = readConfig(process.env);
  const log = (line: string) => {
    if (config.logLevel !== "silent") console.error(line);
  };
  const embedded = !config.databaseUrl;
  const release = embedded ? acquireDataDirLock(config.dataDir) : () => {};
  const db = await openDatabase({ databaseUrl: config.databaseUrl, max: config.databasePoolSize, dataDir: embedded ? join(config.dataDir, "pgdata") : undefined });
  const now = () => new Date();

  if (embedded || process.env.LOAD_DEMO === "1") {
    const demo = await ensureDemo(db, { now: now(), dataDir: embedded ? config.dataDir : undefined });
    if (demo.created) {
      console.log(`Loaded the demo index. Demo API key (shown once${embedded ? `, also saved to ${join(config.dataDir, "demo-api-key")}` : ""}):`);
      console.log(`  ${demo.apiKey}`);
    } else if (embedded) {
      console.log(`Demo API key: see ${join(config.dataDir, "demo-api-key")}`);
    }
  }

  const sources = configuredSources(config, log);
  const app = createApp({ db, config, now, log, sources });
  // WORKER=0 leaves jobs to `npm run worker` processes (PostgreSQL only: the embedded database
  // opens in one process, so there the worker always runs here)
  const worker = config.jobs.worker || embedded ? createWorker(jobRunDeps(config, { db, now, log, sources })) : undefined;
  worker?.start();
  const stop = await serve(app.fetch, config);
  console.log(`walletid listening on ${config.publicUrl} (${embedded ? `embedded database in ${config.dataDir}` : "PostgreSQL"})${worker ? "" : "; job worker off (WORKER=0)"}`);

  let stopping = false;
  const shutdown = async () => {
    if (stopping) return;
    stopping = true;
    await stop().catch(() => {});
    await worker?.stop();
    await app.close();
    await db.close();
    release();
    process.exit(0);
  };
  process.on("SIGINT", shutdown);
  process.on("SIGTERM", shutdown);
}

main().catch((err: Error) => {
  console.error(err.message.startsWith("Cannot") || err.message.startsWith("The embedded") ? err.message : `Cannot start: ${err.message}`);
  process.exit(1);
});
