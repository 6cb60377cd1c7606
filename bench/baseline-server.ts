// The bench's baseline server: GET /api/v1/wallet/{address} on the same stack as the real one
// (hono on @hono/node-server, postgres.js through openDatabase with the same pool, the same point
// select, record building and JSON), without authentication or metering. Run by bench/bench.ts.
import process from "node:process";
import { Hono } from "hono";
import { serve } from "@hono/node-server";
import { readConfig } from "../src/config.ts";
import { openDatabase } from "../src/db/open.ts";
import { isAddress } from "../src/index/address.ts";
import { buildViews, selectIdentityRows } from "../src/index/records.ts";
import { invalidAddress, renderError } from "../src/http/errors.ts";
import { lookupResponse } from "../src/rest/wallet.ts";
import { requestIdAndCors } from "../src/app.ts";

async function main(): Promise<void> {
  const config = readConfig(process.env);
  if (!config.databaseUrl) throw new Error("Cannot start the baseline: DATABASE_URL is not set");
  const db = await openDatabase({ databaseUrl: config.databaseUrl, max: config.databasePoolSize, timeouts: config.databaseTimeouts });
  const log = (line: string) => {
    if (config.logLevel !== "silent") console.error(line);
  };

  const app = new Hono();
  // the same request-id and CORS layer as the real app: only authentication and metering differ
  app.use(requestIdAndCors());
  app.get("/healthz", async (c) => {
    await db.query("SELECT 1");
    return c.json({ status: "ok" });
  });

  // src/rest/wallet.ts without the meter() call: the same lookup and the same response
  app.get("/api/v1/wallet/:address", async (c) => {
    const raw = c.req.param("address");
    if (!isAddress(raw)) throw invalidAddress([raw]);
    const address = raw.toLowerCase();
    const rows = await selectIdentityRows(db, [address]);
    const view = buildViews(rows, { now: new Date(), staleAfterDays: config.staleAfterDays }).get(address);
    return lookupResponse(c, address, view);
  });
  app.onError((err, c) => renderError(err, c, log));

  const server = serve({ fetch: async (req: Request) => await app.fetch(req), port: config.port, hostname: config.host });
  await new Promise<void>((resolve) => server.once("listening", () => resolve()));
  console.log(`walletid bench baseline listening on http://${config.host}:${config.port}`);

  const shutdown = async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await db.close();
    process.exit(0);
  };
  process.once("SIGINT", shutdown);
  process.once("SIGTERM", shutdown);
}

main().catch((err: Error) => {
  console.error(err.message.startsWith("Cannot") ? err.message : `Cannot start the baseline: ${err.message}`);
  process.exit(1);
});
