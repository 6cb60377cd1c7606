// SIGTERM during a flood of billed batches, on a real server process over PostgreSQL: every
// request is answered whole or refused before it is read (never cut mid-response), the process
// exits 0, and the ledger holds exactly the matches the answered responses billed.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { openDatabase } from "../src/db/open.ts";
import type { Db } from "../src/db/types.ts";
import { createPostgresDatabase } from "./support/db.ts";
import { createCustomer } from "./support/server.ts";
import { address, importIndex } from "./support/http.ts";
import { startProcess, type Running } from "./support/process.ts";

const WALLETS = Array.from({ length: 400 }, (_, i) => address(i + 1, "5"));

let created: { url: string; drop: () => Promise<void> };
let db: Db;

before(async () => {
  created = await createPostgresDatabase();
  db = await openDatabase({ databaseUrl: created.url });
  await importIndex(
    db,
    WALLETS.map((wallet, i) => ({ wallet, kind: "twitter", route: "x-signin", handle: `flood${i}` })),
    new Date(),
  );
});
after(async () => {
  await db.close();
  await created.drop();
});

test("SIGTERM during a batch flood: no response cut, exit 0, billed matches = debits", async () => {
  const server: Running = await startProcess(process.execPath, ["--import", "tsx", "src/main.ts"], {
    DATABASE_URL: created.url,
    MAINTENANCE_AT: "off",
    LOG_LEVEL: "info",
  });
  const customer = await createCustomer(db, { packs: [{ pack: "Scale" }], now: new Date() });
  // a plan without rate ceilings: every call of the flood is billed, none refused
  await db.query(
    `INSERT INTO plans (name, rank, requests_per_minute, requests_per_day, requests_per_month, max_batch_size)
     VALUES ('shutdown-unlimited', 100, NULL, NULL, NULL, 1000) ON CONFLICT (name) DO NOTHING`,
  );
  await db.query("UPDATE accounts SET plan_override = 'shutdown-unlimited' WHERE id = $1", [customer.accountId]);
  let billed = 0;
  let answered = 0;
  let refused = 0;
  const cut: string[] = [];
  let sending = true;
  const clients = Array.from({ length: 8 }, async (_, client) => {
    let n = client;
    while (sending) {
      const wallets = WALLETS.slice((n * 5) % 395, ((n * 5) % 395) + 5);
      n += 8;
      let res: Response;
      try {
        res = await fetch(`${server.url}/api/v1/batch`, {
          method: "POST",
          headers: { Authorization: `Bearer ${customer.apiKey}`, "Content-Type": "application/json" },
          body: JSON.stringify({ wallets }),
        });
      } catch {
        // refused or reset before any answer: the request never ran (checked against the ledger below)
        refused++;
        if (refused > 50) return;
        await new Promise((resolve) => setTimeout(resolve, 20));
        continue;
      }
      try {
        const body = (await res.json()) as { meta?: { matched?: number } };
        if (res.status === 200) {
          answered++;
          billed += body.meta?.matched ?? 0;
        } else if (res.status !== 503) {
          cut.push(`status ${res.status}: ${JSON.stringify(body)}`);
        }
      } catch (err) {
        cut.push(`a response cut short: ${(err as Error).message}`);
      }
    }
  });
  await new Promise((resolve) => setTimeout(resolve, 1500));
  assert.ok(answered > 0, "the flood is being answered");
  process.kill(server.child.pid!, "SIGTERM");
  const exit = await server.exited;
  sending = false;
  await Promise.all(clients);
  assert.equal(exit, 0, `exits 0 on SIGTERM: ${server.output().slice(-2000)}`);
  assert.deepEqual(cut, []);
  const [{ debited }] = await db.query<{ debited: string }>(
    "SELECT coalesce(sum(matches), 0)::text AS debited FROM debits WHERE account_id = $1",
    [customer.accountId],
  );
  assert.equal(Number(debited), billed, `debits (${debited}) = matches billed in the ${answered} answered responses`);
  assert.ok(billed > 0);
});
