// Faults around a purchase: the facilitator down, slow past its timeout, settling with success
// false or a 500, and the database failing after settlement (a 503: the settlement is recorded, and
// a replay or `npm run admin -- x402 redeem REF` grants it exactly once). Nothing is granted by a fault.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { decodePaymentRequiredHeader, decodePaymentResponseHeader } from "@x402/core/http";
import type { Db } from "../../src/db/types.ts";
import { grantPayment } from "../../src/x402/purchase.ts";
import { startFacilitator, type Facilitator } from "../../scripts/facilitator.ts";
import { eachDatabase } from "../support/db.ts";
import { assertErrorBody, expectStatus } from "../support/http.ts";
import { freePort } from "../support/ports.ts";
import { createClock, startServer, type TestServer } from "../support/server.ts";
import { buyInit, faultyFacilitator, lastSignature, ledgerSnapshot, newBuyer, PAY_TO, type FaultyFacilitator } from "./support.ts";

const REPO = fileURLToPath(new URL("../..", import.meta.url));

function admin(args: string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const base = { ...process.env };
  delete base.DATABASE_URL;
  delete base.DATA_DIR;
  const child = spawn(process.execPath, ["--import", "tsx", "scripts/admin.ts", ...args], { cwd: REPO, env: { ...base, ...env } });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk) => (stdout += chunk));
  child.stderr.on("data", (chunk) => (stderr += chunk));
  return new Promise((resolve) => child.on("close", (code) => resolve({ code, stdout, stderr })));
}

/** The database with transactions that fail while `fail` is set (a connection lost mid-purchase). */
function flakyTransactions(db: Db): Db & { fail: boolean } {
  const flaky: Db & { fail: boolean } = {
    driver: db.driver,
    fail: false,
    query: (text, params) => db.query(text, params),
    queryArrays: (text, params) => db.queryArrays(text, params),
    exec: (text) => db.exec(text),
    close: () => db.close(),
    transaction: (fn) => (flaky.fail ? Promise.reject(Object.assign(new Error("Connection terminated unexpectedly"), { code: "CONNECTION_CLOSED" })) : db.transaction(fn)),
  };
  return flaky;
}

eachDatabase("x402 purchase faults", (get) => {
  let facilitator: Facilitator;
  let proxy: FaultyFacilitator;
  let server: TestServer;
  let downServer: TestServer;
  let db: Db & { fail: boolean };

  before(async () => {
    facilitator = await startFacilitator();
    proxy = await faultyFacilitator(facilitator.url);
    db = flakyTransactions(get().db);
    const clock = createClock(new Date());
    server = await startServer(db, { clock, env: { X402_FACILITATOR_URL: proxy.url, X402_PAY_TO: PAY_TO, UPSTREAM_TIMEOUT_MS: "1000" } });
    // nothing listens on this port
    downServer = await startServer(db, { clock, env: { X402_FACILITATOR_URL: `http://127.0.0.1:${await freePort()}`, X402_PAY_TO: PAY_TO } });
  });
  after(async () => {
    await server.close();
    await downServer.close();
    await proxy.close();
    await facilitator.close();
  });

  async function unchanged<T>(what: string, run: () => Promise<T>): Promise<T> {
    const before = await ledgerSnapshot(get().db);
    const result = await run();
    assert.deepEqual(await ledgerSnapshot(get().db), before, `${what}: nothing granted`);
    return result;
  }

  test("facilitator down: 503 with Retry-After, nothing claimed, nothing charged", async () => {
    const buyer = await newBuyer(facilitator, 5);
    const res = await unchanged("down", async () => expectStatus(await buyer.pay(`${downServer.url}/api/x402/buy`, buyInit(1)), 503));
    assertErrorBody(res, "SERVICE_UNAVAILABLE");
    assert.ok(Number(res.headers.get("Retry-After")) > 0);
    assert.equal(facilitator.token.balanceOf(buyer.address), 5_000_000n);
    assert.equal((await get().db.query("SELECT id FROM x402_payments WHERE payer = $1", [buyer.address])).length, 0, "no claim");
  });

  test("facilitator slow past its timeout at verify: 503, nothing claimed", async () => {
    const buyer = await newBuyer(facilitator, 5);
    proxy.mode = "slow";
    proxy.delayMs = 1500;
    try {
      const res = await unchanged("slow verify", async () => expectStatus(await buyer.pay(`${server.url}/api/x402/buy`, buyInit(1)), 503));
      assertErrorBody(res, "SERVICE_UNAVAILABLE");
    } finally {
      proxy.mode = "pass";
    }
    assert.equal(facilitator.token.balanceOf(buyer.address), 5_000_000n);
  });

  test("settle answering HTTP 200 with success false: 402 with the reason, the claim kept as failed, nothing granted", async () => {
    const buyer = await newBuyer(facilitator, 5);
    proxy.mode = "settle-false";
    let res;
    try {
      res = await unchanged("settle false", async () => expectStatus(await buyer.pay(`${server.url}/api/x402/buy`, buyInit(1)), 402));
    } finally {
      proxy.mode = "pass";
    }
    assertErrorBody(res, "PAYMENT_REQUIRED");
    assert.equal(decodePaymentRequiredHeader(res.headers.get("PAYMENT-REQUIRED")!).error, "invalid_exact_evm_transaction_failed");
    assert.equal(decodePaymentResponseHeader(res.headers.get("PAYMENT-RESPONSE")!).success, false);
    const [claim] = await get().db.query<{ state: string }>("SELECT state FROM x402_payments WHERE payer = $1", [buyer.address]);
    assert.equal(claim.state, "failed");
    // the same authorization again: refused again, never settled a second time
    const again = await unchanged("settle false, resent", async () =>
      expectStatus(await fetch(`${server.url}/api/x402/buy`, buyInit(1, { "PAYMENT-SIGNATURE": lastSignature(buyer) })), 402),
    );
    assert.equal(decodePaymentRequiredHeader(again.headers.get("PAYMENT-REQUIRED")!).error, "invalid_exact_evm_transaction_failed");
    assert.equal(facilitator.token.balanceOf(buyer.address), 5_000_000n);
  });

  test("settle slow past its timeout or answering 500: 500 with a settlement reference, kept as a tombstone, nothing granted", async () => {
    for (const mode of ["slow-settle", "settle-500"] as const) {
      const buyer = await newBuyer(facilitator, 5);
      proxy.mode = mode;
      proxy.delayMs = 1500;
      let res;
      try {
        res = await unchanged(mode, async () => expectStatus(await buyer.pay(`${server.url}/api/x402/buy`, buyInit(1)), 500, mode));
      } finally {
        proxy.mode = "pass";
      }
      assert.equal(res.body.code, "INTERNAL_ERROR");
      assert.match(res.body.error, /may have been taken/);
      const [claim] = await get().db.query<{ id: string; state: string }>("SELECT id, state FROM x402_payments WHERE payer = $1", [buyer.address]);
      assert.deepEqual({ ...claim }, { id: res.body.settlement, state: "unknown" }, mode);
      // a resend repeats the reference and is never settled again, even once the slow transfer landed
      await new Promise((r) => setTimeout(r, mode === "slow-settle" ? 800 : 0));
      const again = await unchanged(`${mode}, resent`, async () =>
        expectStatus(await fetch(`${server.url}/api/x402/buy`, buyInit(1, { "PAYMENT-SIGNATURE": lastSignature(buyer) })), 500),
      );
      assert.equal(again.body.settlement, claim.id);
    }
  });

  test("settled but the grant failed: 503 with Retry-After and the settlement recorded; redeem grants it exactly once", async () => {
    const buyer = await newBuyer(facilitator, 5);
    db.fail = true;
    let res;
    try {
      res = await unchanged("database down after settlement", async () => expectStatus(await buyer.pay(`${server.url}/api/x402/buy`, buyInit(2)), 503));
    } finally {
      db.fail = false;
    }
    assert.equal(res.headers.get("retry-after"), "2");
    assertErrorBody(res, "SERVICE_UNAVAILABLE");
    assert.match(res.body.error, /settled/);
    assert.equal(facilitator.token.balanceOf(buyer.address), 3_000_000n, "the money moved");
    const [claim] = await get().db.query<{ id: string; state: string; tx_hash: string }>("SELECT id, state, tx_hash FROM x402_payments WHERE payer = $1", [buyer.address]);
    assert.equal(claim.state, "settled");
    assert.match(claim.tx_hash, /^0x[0-9a-f]{64}$/);
    const reference = claim.id;

    let apiKey: string;
    const url = get().url;
    if (url) {
      const first = await admin(["x402", "redeem", reference], { DATABASE_URL: url });
      assert.equal(first.code, 0, first.stderr);
      const out = JSON.parse(first.stdout);
      assert.equal(out.settlement, reference);
      assert.equal(out.matches_added, 24);
      assert.equal(out.matches_available, 24);
      assert.match(out.api_key, /^wid_live_/);
      apiKey = out.api_key;
      const second = await admin(["x402", "redeem", reference], { DATABASE_URL: url });
      assert.equal(second.code, 1);
      assert.equal(second.stdout, "");
      assert.match(second.stderr.trim(), new RegExp(`^Cannot redeem ${reference}: already redeemed`));
    } else {
      const first = await grantPayment(get().db, { paymentId: reference, now: new Date() });
      assert.ok(first.ok);
      assert.equal(first.grant.matchesAvailable, 24);
      apiKey = first.grant.key!.apiKey;
      const second = await grantPayment(get().db, { paymentId: reference, now: new Date() });
      assert.equal(second.ok, false);
      assert.equal(!second.ok && second.code, "ALREADY_GRANTED");
    }
    const grants = await get().db.query("SELECT matches FROM credit_grants WHERE grant_key = $1", [`x402:${reference}`]);
    assert.deepEqual([...grants].map((g) => g.matches), [24], "granted once");
    const usage = await expectStatus(await fetch(`${server.url}/api/v1/usage`, { headers: { Authorization: apiKey } }), 200);
    assert.equal(usage.body.data.credits.available, 24);
    // now a replay reports the purchase
    const after = await expectStatus(await fetch(`${server.url}/api/x402/buy`, buyInit(2, { "PAYMENT-SIGNATURE": lastSignature(buyer) })), 200);
    assert.equal(after.body.newly_granted, false);
    assert.equal(after.body.matches_available, 24);
  });
});

describe("admin x402 redeem input", () => {
  test("a malformed or unknown reference stops with one line", async () => {
    const bad = await admin(["x402", "redeem", "nope"], { DATA_DIR: "/nonexistent-walletid" });
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /^Invalid REF "nope": a settlement reference is a UUID\n$/);
  });
});
