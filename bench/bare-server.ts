// The bench's bare reference: hono on @hono/node-server and postgres.js answering
// GET /api/v1/wallet/{address} with one primary-key select on the wallets table and the row as
// JSON; nothing of the project (no config, envelope, record building, auth or metering). It shows
// what the stack itself costs, so the bench can say how far the project's paths are from it.
import process from "node:process";
import { serve } from "@hono/node-server";
import { Hono } from "hono";
import postgres from "postgres";

const databaseUrl = process.env.DATABASE_URL;
if (!databaseUrl) {
  console.error("Cannot start the bare reference: DATABASE_URL is not set");
  process.exit(1);
}
// the project's pool size (DATABASE_POOL_SIZE, default 4), so both hold as many backends
const sql = postgres(databaseUrl, { max: Number(process.env.DATABASE_POOL_SIZE ?? 4), onnotice: () => {} });

const app = new Hono();
app.get("/healthz", async (c) => {
  await sql`SELECT 1`;
  return c.json({ status: "ok" });
});
app.get("/api/v1/wallet/:address", async (c) => {
  const [row] = await sql`SELECT address, last_updated, checked_at FROM wallets WHERE address = ${c.req.param("address").toLowerCase()}`;
  return c.json({ data: row ?? null });
});
app.onError((_err, c) => c.json({ error: "Internal error", code: "INTERNAL_ERROR" }, 500));

const port = Number(process.env.PORT ?? 8787);
const hostname = process.env.HOST ?? "127.0.0.1";
const server = serve({ fetch: app.fetch, port, hostname });
server.once("listening", () => console.log(`walletid bench bare reference listening on http://${hostname}:${port}`));

const shutdown = () => {
  server.close(() => void sql.end({ timeout: 5 }).then(() => process.exit(0)));
};
process.once("SIGINT", shutdown);
process.once("SIGTERM", shutdown);
