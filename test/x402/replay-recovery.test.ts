// A purchase interrupted between settlement and grant is completed by the buyer resending the same
// PAYMENT-SIGNATURE, with no operator: granted exactly once, money moved exactly once, also when
// two replays race and when the claimer died (its claim taken over, the chain looked at).
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type { Db } from "../../src/db/types.ts";
import { decodePayment } from "../../src/x402/payment.ts";
import { claimPayment } from "../../src/x402/purchase.ts";
import { startFacilitator, type Facilitator } from "../../scripts/facilitator.ts";
import { eachDatabase } from "../support/db.ts";
import { failingDb } from "../support/failing-db.ts";
import { expectStatus } from "../support/http.ts";
import { createClock, startServer, type TestServer } from "../support/server.ts";
import { buyInit, lastSignature, newBuyer, PAY_TO, signPayment, USDC, type Buyer } from "./support.ts";

/** The grant's first statement (its transaction fails) and the settlement record: a process killed after settling. */
const GRANT = "x402_payments_lock";
const RECORD = "x402_payments_record_outcome";
/** Past the claim's bound with UPSTREAM_TIMEOUT_MS 1000: twice the timeout plus 30 seconds. */
const STALE_MS = 40_000;

eachDatabase("x402 purchase completed by a replay", (get) => {
  const clock = createClock(new Date());
  let facilitator: Facilitator;
  let server: TestServer;
  let blind: TestServer;
  let failing: string[] = [];

  before(async () => {
    facilitator = await startFacilitator();
    const db: Db = failingDb(get().db, (text) =>
      failing.some((name) => text.includes(name)) ? Object.assign(new Error("Connection terminated unexpectedly"), { code: "CONNECTION_CLOSED" }) : undefined,
    );
    server = await startServer(db, {
      clock,
      env: { X402_FACILITATOR_URL: facilitator.url, X402_PAY_TO: PAY_TO, UPSTREAM_TIMEOUT_MS: "1000", X402_RPC_URL: `${facilitator.url}/rpc` },
    });
    // the same, with no X402_RPC_URL: it cannot look at the chain
    blind = await startServer(db, { clock, env: { X402_FACILITATOR_URL: facilitator.url, X402_PAY_TO: PAY_TO, UPSTREAM_TIMEOUT_MS: "1000" } });
  });
  after(async () => {
    await blind.close();
    await server.close();
    await facilitator.close();
  });

  async function failingWhile<T>(names: string[], run: () => Promise<T>): Promise<T> {
    failing = names;
    try {
      return await run();
    } finally {
      failing = [];
    }
  }

  const replay = async (header: string, quantity = 1) => await fetch(`${server.url}/api/x402/buy`, buyInit(quantity, { "PAYMENT-SIGNATURE": header }));

  async function payment(buyer: Buyer) {
    const [row] = await get().db.query<{ id: string; state: string }>("SELECT id, state FROM x402_payments WHERE payer = $1", [buyer.address]);
    const grants = await get().db.query<{ matches: number }>("SELECT matches FROM credit_grants WHERE grant_key = $1", [`x402:${row?.id}`]);
    return { ...row, grants: [...grants].map((g) => g.matches) };
  }

  async function usable(apiKey: string, available: number) {
    const usage = await expectStatus(await fetch(`${server.url}/api/v1/usage`, { headers: { Authorization: apiKey } }), 200);
    assert.equal(usage.body.data.credits.available, available);
  }

  test("the grant failing after settlement: 503 with Retry-After, the settlement recorded, the replay grants it once", async () => {
    const buyer = await newBuyer(facilitator, 5);
    const first = await failingWhile([GRANT], async () => expectStatus(await buyer.pay(`${server.url}/api/x402/buy`, buyInit(2)), 503));
    assert.equal(first.headers.get("retry-after"), "2");
    assert.equal(first.body.code, "SERVICE_UNAVAILABLE");
    assert.match(first.body.error, /settled.*resend the same request/);
    assert.deepEqual(await payment(buyer).then(({ state, grants }) => ({ state, grants })), { state: "settled", grants: [] });
    assert.equal(facilitator.token.balanceOf(buyer.address), 3_000_000n, "the money moved");

    const done = await expectStatus(await replay(lastSignature(buyer), 2), 200);
    assert.match(done.body.api_key, /^wid_live_/);
    assert.equal(done.body.newly_granted, true);
    assert.equal(done.body.matches_added, 24);
    assert.equal(done.body.matches_available, 24);
    assert.ok(done.headers.get("payment-response"), "the settlement is reported");
    await usable(done.body.api_key, 24);

    const again = await expectStatus(await replay(lastSignature(buyer), 2), 200);
    assert.equal(again.body.newly_granted, false);
    assert.equal(again.body.api_key, null);
    assert.deepEqual((await payment(buyer)).grants, [24], "granted once");
    assert.equal((await payment(buyer)).state, "granted");
    assert.equal(facilitator.token.balanceOf(buyer.address), 3_000_000n, "money moved once");
  });

  test("killed between settlement and grant: the stale claim is taken over, the chain shows the transfer, granted once", async () => {
    const buyer = await newBuyer(facilitator, 5);
    await failingWhile([GRANT, RECORD], async () => expectStatus(await buyer.pay(`${server.url}/api/x402/buy`, buyInit(1)), 503));
    assert.equal((await payment(buyer)).state, "claimed", "nothing recorded, as a killed process leaves it");
    assert.equal(facilitator.token.balanceOf(buyer.address), 4_000_000n);

    clock.advance(STALE_MS);
    const done = await expectStatus(await replay(lastSignature(buyer)), 200);
    assert.match(done.body.api_key, /^wid_live_/);
    assert.equal(done.body.newly_granted, true);
    assert.equal(done.body.matches_available, 12);
    await usable(done.body.api_key, 12);
    assert.deepEqual(await payment(buyer).then(({ state, grants }) => ({ state, grants })), { state: "granted", grants: [12] });
    assert.equal(facilitator.token.balanceOf(buyer.address), 4_000_000n, "money moved once");
  });

  test("a claim whose claimer died before settling: two replays race, one takes it over and settles it, granted once", async () => {
    const buyer = await newBuyer(facilitator, 5);
    const { header, authorization } = await signPayment(buyer.account);
    const decoded = decodePayment(header);
    assert.ok(decoded.ok);
    const key = { network: "eip155:8453", asset: USDC.toLowerCase(), payer: buyer.address, nonce: authorization.nonce.toLowerCase() };
    const claimed = await claimPayment(get().db, { id: crypto.randomUUID(), key, signature: decoded.signature, payTo: PAY_TO, amount: "1000000", quantity: 1, now: clock.now() });
    assert.ok(claimed);

    clock.advance(STALE_MS);
    const [done, raced] = await Promise.all([replay(header), replay(header)]);
    const bodies = [await expectStatus(done, 200), await expectStatus(raced, 200)].map((r) => r.body);
    assert.deepEqual(bodies.map((b) => b.newly_granted).sort(), [false, true], "one replay granted it, the other reports it");
    assert.equal(bodies.filter((b) => typeof b.api_key === "string").length, 1, "one key minted");
    assert.deepEqual(await payment(buyer).then(({ state, grants }) => ({ state, grants })), { state: "granted", grants: [12] });
    assert.equal(facilitator.token.balanceOf(buyer.address), 4_000_000n, "money moved once");
  });

  test("a claim whose claimer died, its authorization then canceled by the payer: the spent nonce is no payment, nothing granted", async () => {
    const buyer = await newBuyer(facilitator, 5);
    const { header, authorization } = await signPayment(buyer.account);
    const decoded = decodePayment(header);
    assert.ok(decoded.ok);
    const nonce = authorization.nonce.toLowerCase() as `0x${string}`;
    const key = { network: "eip155:8453", asset: USDC.toLowerCase(), payer: buyer.address, nonce };
    assert.ok(await claimPayment(get().db, { id: crypto.randomUUID(), key, signature: decoded.signature, payTo: PAY_TO, amount: "1000000", quantity: 1, now: clock.now() }));
    // FiatToken's cancelAuthorization, signed by the payer: the nonce is spent and no money moves
    const signature = await buyer.account.signTypedData({
      domain: { name: "USD Coin", version: "2", chainId: 8453, verifyingContract: USDC },
      types: { CancelAuthorization: [{ name: "authorizer", type: "address" }, { name: "nonce", type: "bytes32" }] },
      primaryType: "CancelAuthorization",
      message: { authorizer: buyer.account.address, nonce },
    });
    const canceled = await fetch(`${facilitator.url}/cancel`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ authorizer: buyer.account.address, nonce, signature }) });
    assert.equal(canceled.status, 200);
    assert.equal(facilitator.token.authorizationState(buyer.address, nonce), true, "the nonce reads as used");

    clock.advance(STALE_MS);
    const res = await replay(header);
    assert.notEqual(res.status, 200);
    const body = await res.json();
    assert.equal(body.api_key, undefined, "no key minted");
    assert.deepEqual((await payment(buyer)).grants, [], "nothing granted");
    assert.notEqual((await payment(buyer)).state, "granted");
    assert.equal(facilitator.token.balanceOf(buyer.address), 5_000_000n, "no money moved");
    const keys = await get().db.query("SELECT k.id FROM api_keys k JOIN x402_wallets w ON w.account_id = k.account_id WHERE w.wallet = $1", [buyer.address]);
    assert.equal(keys.length, 0);
  });

  test("two replays racing over a settled payment: one grant, one key", async () => {
    const buyer = await newBuyer(facilitator, 5);
    await failingWhile([GRANT], async () => expectStatus(await buyer.pay(`${server.url}/api/x402/buy`, buyInit(1)), 503));
    const bodies = await Promise.all([replay(lastSignature(buyer)), replay(lastSignature(buyer)), replay(lastSignature(buyer))].map(async (r) => (await expectStatus(await r, 200)).body));
    assert.deepEqual(bodies.map((b) => b.newly_granted).sort(), [false, false, true]);
    assert.equal(bodies.filter((b) => typeof b.api_key === "string").length, 1);
    assert.deepEqual((await payment(buyer)).grants, [12], "granted once");
    const keys = await get().db.query("SELECT k.id FROM api_keys k JOIN x402_wallets w ON w.account_id = k.account_id WHERE w.wallet = $1", [buyer.address]);
    assert.equal(keys.length, 1);
    assert.equal(facilitator.token.balanceOf(buyer.address), 4_000_000n, "money moved once");
  });

  test("killed after settlement with no X402_RPC_URL: the taken-over claim is kept as unknown (500 with its reference), nothing granted", async () => {
    const buyer = await newBuyer(facilitator, 5);
    await failingWhile([GRANT, RECORD], async () => expectStatus(await buyer.pay(`${blind.url}/api/x402/buy`, buyInit(1)), 503));
    clock.advance(STALE_MS);
    const res = await expectStatus(await fetch(`${blind.url}/api/x402/buy`, buyInit(1, { "PAYMENT-SIGNATURE": lastSignature(buyer) })), 500);
    const { id, state, grants } = await payment(buyer);
    assert.equal(res.body.settlement, id);
    assert.deepEqual({ state, grants }, { state: "unknown", grants: [] });
    assert.equal(facilitator.token.balanceOf(buyer.address), 4_000_000n, "money moved once");
  });
});
