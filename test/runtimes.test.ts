// The same module tree under Node (`npm start`), Deno (`deno task start`) and Bun (`bun run start:bun`):
// each runtime, from the deno and bun packages in node_modules (nothing is installed or downloaded
// here), serves its own fresh PostgreSQL database, and the same HTTP checks run against each.
import assert from "node:assert/strict";
import { decodePaymentRequiredHeader } from "@x402/core/http";
import { existsSync } from "node:fs";
import { createServer, type AddressInfo } from "node:net";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { createApp } from "../src/app.ts";
import { readConfig } from "../src/config.ts";
import { openDatabase } from "../src/db/open.ts";
import type { Db } from "../src/db/types.ts";
import { createPostgresDatabase } from "./support/db.ts";
import { BIN, startProcess, type Running } from "./support/process.ts";
import { W, loadFixtures } from "./support/fixtures.ts";
import { assertErrorBody, batchInit, debitsOf, expectStatus, rateHeaders } from "./support/http.ts";
import { createCustomer } from "./support/server.ts";
import { startFacilitator, type Facilitator } from "../scripts/facilitator.ts";
import { buyInit, newBuyer, PAY_TO } from "./x402/support.ts";

// fixtures observed at a fixed time, so every runtime sees the same (stale) records
const IMPORTED_AT = new Date("2026-01-01T00:00:00Z");

// outbound requests (docs/operating.md): Node pins its connections; Deno runs with an egress
// proxy (a local listener that counts connections); Bun without one, so it refuses them all
const RUNTIMES = [
  { name: "Node.js", command: "npm", args: ["start"], proxy: false },
  { name: "Deno", command: join(BIN, "deno"), args: ["task", "start"], proxy: true },
  { name: "Bun", command: join(BIN, "bun"), args: ["run", "start:bun"], proxy: false },
];


test("the deno and bun binaries come from node_modules", () => {
  for (const bin of ["deno", "bun"]) {
    assert.ok(existsSync(join(BIN, bin)), `node_modules/.bin/${bin} exists: run npm ci (deno and bun are devDependencies)`);
  }
});

// The reference: the same app in this process, on its own database, with the same fixtures.
let reference: { lookup: any; batch: any };

before(async () => {
  const created = await createPostgresDatabase();
  const db = await openDatabase({ databaseUrl: created.url, max: 2 });
  try {
    await loadFixtures(db, IMPORTED_AT);
    const { apiKey } = await createCustomer(db, { packs: [{ pack: "Agent" }], now: new Date() });
    const app = createApp({ db, config: readConfig({}), log: () => {} });
    const auth = { Authorization: `Bearer ${apiKey}` };
    const lookup = await app.fetch(new Request(`http://x/api/v1/wallet/${W.full}`, { headers: auth }));
    const batch = await app.fetch(new Request("http://x/api/v1/batch", { ...batchInit(apiKey, [W.full, W.ensOnly, W.neverSeen, W.full]), headers: { ...auth, "Content-Type": "application/json" } }));
    reference = { lookup: await lookup.json(), batch: await batch.json() };
    await app.close();
  } finally {
    await db.close();
    await created.drop();
  }
});

for (const runtime of RUNTIMES) {
  describe(`${runtime.name}: ${[runtime.command.replace(`${BIN}/`, ""), ...runtime.args].join(" ")}`, () => {
    let db: Db;
    let drop: () => Promise<void>;
    let server: Running;
    let customer: { accountId: string; apiKey: string };
    let facilitator: Facilitator;
    let proxy: { url: string; connections: number; close(): Promise<void> } | undefined;

    before(async () => {
      const created = await createPostgresDatabase();
      drop = created.drop;
      db = await openDatabase({ databaseUrl: created.url, max: 2 });
      await loadFixtures(db, IMPORTED_AT);
      customer = await createCustomer(db, { packs: [{ pack: "Agent" }], now: new Date() });
      facilitator = await startFacilitator();
      if (runtime.proxy) proxy = await countingListener();
      server = await startProcess(runtime.command, runtime.args, {
        DATABASE_URL: created.url,
        LOG_LEVEL: "info",
        X402_FACILITATOR_URL: facilitator.url,
        X402_PAY_TO: PAY_TO,
        ...(proxy ? { OUTBOUND_PROXY: proxy.url } : {}),
      });
    });
    after(async () => {
      await server?.stop();
      await facilitator?.close();
      await proxy?.close();
      await db?.close();
      await drop?.();
    });

    const get = (path: string, init: RequestInit = {}) => fetch(server.url + path, init);
    const auth = () => ({ Authorization: `Bearer ${customer.apiKey}` });

    test("serves with the runtime's own server", () => {
      assert.match(server.output(), new RegExp(`walletid listening on .*\\(${runtime.name} `), server.output());
    });

    test("GET /wallet/{address}: the same record as in-process, billed, with rate-limit headers", async () => {
      const res = await expectStatus(await get(`/api/v1/wallet/${W.full.toUpperCase().replace("0X", "0x")}`, { headers: auth() }), 200);
      assert.deepEqual(res.body, reference.lookup);
      assert.equal(res.body.data.twitter.handle, "alice");
      const rate = rateHeaders(res);
      assert.equal(rate.limit, 60, "Developer plan minute window");
      assert.ok(rate.remaining <= 59, `one unit used: ${rate.remaining}`);
      assert.ok(rate.reset > Date.now() / 1000 - 1, `X-RateLimit-Reset is Unix seconds ahead: ${rate.reset}`);
      assert.equal(res.headers.get("X-Data-Staleness"), "stale");
      assert.equal((await debitsOf(db, customer.accountId)).reduce((sum, d) => sum + d.matches, 0), 1);
    });

    test("POST /batch: deduplicated, nulls for misses, matched billed", async () => {
      const res = await expectStatus(await get("/api/v1/batch", { ...batchInit(customer.apiKey, [W.full, W.ensOnly, W.neverSeen, W.full]), headers: { ...auth(), "Content-Type": "application/json" } }), 200);
      assert.deepEqual(res.body, reference.batch);
      assert.deepEqual(res.body.meta, { requested: 3, found: 2, not_found: 1, matched: 1 });
      assert.equal(res.body.data[2], null);
      rateHeaders(res);
      assert.equal((await debitsOf(db, customer.accountId)).reduce((sum, d) => sum + d.matches, 0), 2);
    });

    test("errors: a malformed address is 400 INVALID_ADDRESS with rate-limit headers; an invalid key is 401, none the x402 402; unknown path 404", async () => {
      const bad = await expectStatus(await get("/api/v1/wallet/0x1234", { headers: auth() }), 400);
      assertErrorBody(bad, "INVALID_ADDRESS");
      rateHeaders(bad);
      assertErrorBody(await expectStatus(await get(`/api/v1/wallet/${W.full}`, { headers: { Authorization: "Bearer wid_live_nope" } }), 401), "UNAUTHORIZED");
      // x402 is configured here: a keyless lookup is offered per-call payment (upto, one match)
      const unpaid = await expectStatus(await get(`/api/v1/wallet/${W.full}`), 402);
      assertErrorBody(unpaid, "PAYMENT_REQUIRED");
      assert.equal(decodePaymentRequiredHeader(unpaid.headers.get("PAYMENT-REQUIRED")!).accepts[0].scheme, "upto");
      assertErrorBody(await expectStatus(await get("/api/v1/nope"), 404), "NOT_FOUND");
      assertErrorBody(await expectStatus(await get("/api/v1/batch"), 405), "METHOD_NOT_ALLOWED");
    });

    test("OPTIONS preflight is 204 with open CORS", async () => {
      const res = await expectStatus(
        await get("/api/v1/batch", {
          method: "OPTIONS",
          headers: { Origin: "https://app.example", "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization, content-type" },
        }),
        204,
      );
      assert.equal(res.text, "");
      assert.equal(res.headers.get("Access-Control-Allow-Origin"), "*");
      assert.match(res.headers.get("Access-Control-Allow-Methods") ?? "", /POST/);
      assert.match(res.headers.get("Access-Control-Allow-Headers") ?? "", /authorization/i);
    });

    test("POST /api/x402/buy and /api/x402/recover: the official client buys a key, uses it, and recovers it", async () => {
      const buyer = await newBuyer(facilitator, 5);
      const bought = await expectStatus(await buyer.pay(`${server.url}/api/x402/buy`, buyInit(2)), 200, "purchase");
      assert.equal(bought.body.matches_added, 24);
      assert.equal(facilitator.token.balanceOf(buyer.address), 3_000_000n);
      await expectStatus(await get(`/api/v1/wallet/${W.full}`, { headers: { Authorization: bought.body.api_key } }), 200, "the bought key");
      const challenge = (await expectStatus(await get(`/api/x402/recover?wallet=${buyer.address}`), 200)).body;
      const recovered = await expectStatus(
        await get("/api/x402/recover", {
          method: "POST",
          headers: { "Content-Type": "application/json" },
          body: JSON.stringify({ wallet: buyer.address, issued_at: challenge.issued_at, token: challenge.token, signature: await buyer.account.signMessage({ message: challenge.message }) }),
        }),
        200,
        "recovery",
      );
      assert.match(recovered.body.api_key, /^wid_live_/);
    });

    test("public endpoints: /healthz, openapi.json and /docs", async () => {
      assert.deepEqual((await expectStatus(await get("/healthz"), 200)).body, { status: "ok" });
      const doc = (await expectStatus(await get("/api/v1/openapi.json"), 200)).body;
      assert.equal(doc.openapi, "3.1.0");
      assert.equal(doc.servers[0].url, `${server.url}/api/v1`);
      const page = await expectStatus(await get("/docs"), 200);
      assert.match(page.text, /\/api\/v1\/wallet\/\{address\}/);
    });

    test(`OAuth: metadata documents go through the runtime's outbound module (${runtime.name === "Bun" ? "refused without OUTBOUND_PROXY" : "its own resolver keeps them off loopback"})`, async () => {
      const query = new URLSearchParams({
        response_type: "code",
        client_id: "https://localhost/oauth/client.json",
        redirect_uri: "http://127.0.0.1:9/cb",
        code_challenge: "x".repeat(43),
        code_challenge_method: "S256",
      });
      const page = await expectStatus(await get(`/api/oauth/authorize?${query}`, { redirect: "manual" }), 400);
      if (runtime.name === "Bun") {
        assert.match(page.text, /Bun cannot connect to the address it checked, so set OUTBOUND_PROXY/, page.text);
      } else {
        assert.match(page.text, /localhost resolves to (127\.0\.0\.1|::1) \(\w+[^)]*\), not a public address/, page.text);
      }
      if (proxy) assert.equal(proxy.connections, 0, "a name resolving to loopback never reaches the proxy");
    });

    test("MCP: tools/list without a key is counted on the peer address; tools/call is billed", async () => {
      const rpc = (body: unknown, headers: Record<string, string> = {}) =>
        get("/mcp", {
          method: "POST",
          headers: { "Content-Type": "application/json", Accept: "application/json, text/event-stream", ...headers },
          body: JSON.stringify(body),
        });
      const list = await expectStatus(await rpc({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} }), 200);
      assert.equal(list.body.result.tools.length, 10);
      const [row] = await db.query<{ subject: string }>("SELECT subject FROM mcp_hourly_requests");
      assert.match(row.subject, /^ip:(::ffff:)?127\.0\.0\.1$/, "the runtime handed over the connection's peer");
      const debits = (await debitsOf(db, customer.accountId)).length;
      const call = await expectStatus(
        await rpc({ jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "walletid_resolve_wallets", arguments: { wallets: [W.full] } } }, auth()),
        200,
      );
      assert.equal(call.body.result.structuredContent.billed_matches, 1);
      assert.equal((await debitsOf(db, customer.accountId)).length, debits + 1);
    });
  });
}

/** A TCP listener on 127.0.0.1 that counts the connections it gets and closes them. */
async function countingListener(): Promise<{ url: string; connections: number; close(): Promise<void> }> {
  const server = createServer((socket) => {
    listener.connections++;
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const listener = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    connections: 0,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
  return listener;
}
