// npm run --silent mcp:stdio: the same ten tools over standard input and output, keyed by
// WALLETID_API_KEY, billing the same ledger as the HTTP server, on both databases.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, test } from "node:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { openDatabase } from "../../src/db/open.ts";
import { createPostgresDatabase } from "../support/db.ts";
import { loadFixtures, W } from "../support/fixtures.ts";
import { debitsOf, usageCountsOf } from "../support/http.ts";
import { createCustomer } from "../support/server.ts";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "../..");

async function session(env: Record<string, string>, work: (client: Client) => Promise<void>): Promise<string> {
  let stderr = "";
  const transport = new StdioClientTransport({
    command: "npm",
    args: ["run", "--silent", "mcp:stdio"],
    cwd: ROOT,
    env: { PATH: process.env.PATH!, HOME: process.env.HOME ?? "/tmp", LOG_LEVEL: "error", ...env },
    stderr: "pipe",
  });
  transport.stderr?.on("data", (chunk) => (stderr += String(chunk)));
  const client = new Client({ name: "stdio-test", version: "0" });
  try {
    await client.connect(transport);
    await work(client);
  } finally {
    await client.close();
  }
  return stderr;
}

async function exercise(client: Client) {
  const { tools } = await client.listTools();
  assert.equal(tools.length, 10);
  const result = (await client.callTool({ name: "walletid_resolve_wallets", arguments: { wallets: [W.full] } })) as any;
  assert.notEqual(result.isError, true, JSON.stringify(result));
  assert.equal(result.structuredContent.billed_matches, 1);
  assert.equal(result.structuredContent.records[0].x.handle, "alice");
}

describe("MCP over stdio (npm run mcp:stdio)", () => {
  test("PostgreSQL: tools listed, a resolve billed and recorded under /v1/wallet/{address}", async () => {
    const created = await createPostgresDatabase();
    const db = await openDatabase({ databaseUrl: created.url, max: 2 });
    try {
      const now = new Date();
      await loadFixtures(db, now);
      const customer = await createCustomer(db, { packs: [{ pack: "Agent", quantity: 1 }], now });
      const stderr = await session({ WALLETID_API_KEY: customer.apiKey, DATABASE_URL: created.url }, exercise);
      assert.equal((await debitsOf(db, customer.accountId)).length, 1, stderr);
      const events = await usageCountsOf(db, customer.accountId);
      assert.deepEqual(events.map((e) => e.route), ["/v1/wallet/{address}"], "usage written before the process exits");
    } finally {
      await db.close();
      await created.drop();
    }
  });

  test("embedded database: the same, and a mistyped key is a tool error", async () => {
    const dir = mkdtempSync(join(tmpdir(), "walletid-stdio-"));
    try {
      let db = await openDatabase({ dataDir: join(dir, "pgdata") });
      const now = new Date();
      await loadFixtures(db, now);
      const customer = await createCustomer(db, { packs: [{ pack: "Agent", quantity: 1 }], now });
      await db.close();
      await session({ WALLETID_API_KEY: customer.apiKey, DATA_DIR: dir }, exercise);
      await session({ WALLETID_API_KEY: "wid_live_typo", DATA_DIR: dir }, async (client) => {
        const result = (await client.callTool({ name: "walletid_account_balance", arguments: {} })) as any;
        assert.equal(result.isError, true);
        assert.match(result.content[0].text, /Invalid API key/);
      });
      db = await openDatabase({ dataDir: join(dir, "pgdata") });
      assert.equal((await debitsOf(db, customer.accountId)).length, 1);
      await db.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
