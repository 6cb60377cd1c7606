// Entry point: picks Deno.serve, Bun.serve or @hono/node-server; nothing else is runtime-specific.
import { join } from "node:path";
import process from "node:process";
import { readConfig, type Config } from "./config.ts";
import { createApp } from "./app.ts";
import { openDatabase } from "./db/open.ts";
import { acquireDataDirLock } from "./db/datadir-lock.ts";
import { ensureDemo } from "./index/demo.ts";

type Stop = () => Promise<void>;

async function serve(fetch: (req: Request) => Promise<Response>, config: Config): Promise<{ stop: Stop; runtime: string }> {
  const g = globalThis as { Deno?: any; Bun?: any };
  if (g.Deno) {
    const server = g.Deno.serve({ port: config.port, hostname: config.host, onListen: () => {} }, fetch);
    return { stop: () => server.shutdown(), runtime: `Deno ${g.Deno.version.deno}` };
  }
  if (g.Bun) {
    const server = g.Bun.serve({ port: config.port, hostname: config.host, fetch });
    return { stop: async () => server.stop(), runtime: `Bun ${g.Bun.version}` };
  }
  const { serve: nodeServe } = await import("@hono/node-server");
  const server = nodeServe({ fetch, port: config.port, hostname: config.host });
  await new Promise<void>((resolve) => server.once("listening", () => resolve()));
  return { stop: () => new Promise<void>((resolve) => server.close(() => resolve())), runtime: `Node.js ${process.versions.node}` };
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

  const app = createApp({ db, config, now, log });
  const { stop, runtime } = await serve(app.fetch, config);
  console.log(`walletid listening on ${config.publicUrl} (${runtime}, ${embedded ? `embedded database in ${config.dataDir}` : "PostgreSQL"})`);

  let stopping = false;
  const shutdown = async () => {
    if (stopping) return;
    stopping = true;
    await stop().catch(() => {});
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
