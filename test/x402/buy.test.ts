// POST /api/x402/buy through a real listening server and the local facilitator as a real HTTP
// server, paid by the official client (@x402/fetch wrapFetchWithPayment over a viem local account):
// the challenge, a purchase whose key works on the REST API and jobs, a top-up, a recovery, and the
// refusals that come before any payment is asked for.
import assert from "node:assert/strict";
import { test } from "node:test";
import { decodePaymentRequiredHeader, decodePaymentResponseHeader } from "@x402/core/http";
import { createApp } from "../../src/app.ts";
import { readConfig } from "../../src/config.ts";
import { eachDatabase } from "../support/db.ts";
import { W, loadFixtures } from "../support/fixtures.ts";
import { assertErrorBody, expectStatus } from "../support/http.ts";
import { buyInit, ledgerSnapshot, newBuyer, PAY_TO, purchaseSuite, USDC } from "./support.ts";

const PUBLIC_URL = "https://walletid.example";

eachDatabase("x402 purchase with the official client", (get) => {
  const s = purchaseSuite(get, { env: { PUBLIC_URL } });

  test("an unpaid request answers 402 with the x402 v2 challenge for the quantity asked", async () => {
    const res = await expectStatus(await fetch(`${s.server.url}/api/x402/buy`, buyInit(3)), 402);
    assertErrorBody(res, "PAYMENT_REQUIRED");
    const challenge = decodePaymentRequiredHeader(res.headers.get("PAYMENT-REQUIRED")!);
    assert.equal(challenge.x402Version, 2);
    assert.equal(challenge.resource.url, `${PUBLIC_URL}/api/x402/buy`);
    assert.deepEqual(challenge.accepts, [
      {
        scheme: "exact",
        network: "eip155:8453",
        amount: "3000000",
        asset: USDC,
        payTo: PAY_TO,
        maxTimeoutSeconds: 120,
        extra: { name: "USD Coin", version: "2" },
      },
    ]);
    assert.match(res.headers.get("Access-Control-Expose-Headers") ?? "", /PAYMENT-REQUIRED/);
    assert.match(res.headers.get("Access-Control-Expose-Headers") ?? "", /PAYMENT-RESPONSE/);

    // no body: one pack
    const one = await expectStatus(await fetch(`${s.server.url}/api/x402/buy`, { method: "POST" }), 402);
    assert.equal(decodePaymentRequiredHeader(one.headers.get("PAYMENT-REQUIRED")!).accepts[0].amount, "1000000");
  });

  test("a body other than {quantity: 1..25} is 400 INVALID_REQUEST before any payment is asked for", async () => {
    const before = await ledgerSnapshot(get().db);
    for (const body of ['{"quantity":0}', '{"quantity":26}', '{"quantity":1.5}', '{"quantity":"2"}', '{"quantity":1,"account":"x"}', "not json", "[]", "null"]) {
      const res = await expectStatus(await fetch(`${s.server.url}/api/x402/buy`, { method: "POST", body }), 400, body);
      assertErrorBody(res, "INVALID_REQUEST");
      assert.equal(res.headers.get("PAYMENT-REQUIRED"), null, body);
    }
    assert.deepEqual(await ledgerSnapshot(get().db), before);
  });

  test("an OAuth access token is 403 OAUTH_CANNOT_BUY and any other Authorization 401 INVALID_TOPUP_KEY, before a 402", async () => {
    const refused = [
      [`Bearer wid_mcp_${"a".repeat(43)}`, 403, "OAUTH_CANNOT_BUY"],
      [`wid_mcp_${"Z9_-".repeat(11)}`, 403, "OAUTH_CANNOT_BUY"],
      [`Bearer wid_live_${"A".repeat(32)}`, 401, "INVALID_TOPUP_KEY"],
      ["Bearer not-a-key", 401, "INVALID_TOPUP_KEY"],
      ["Basic dXNlcjpwYXNz", 401, "INVALID_TOPUP_KEY"],
    ] as const;
    for (const [authorization, status, code] of refused) {
      const res = await expectStatus(await fetch(`${s.server.url}/api/x402/buy`, buyInit(1, { Authorization: authorization })), status, authorization);
      assertErrorBody(res, code);
      assert.equal(res.headers.get("PAYMENT-REQUIRED"), null, `${authorization}: no challenge`);
    }
    // the official client pays nothing when the server refuses before a 402
    const buyer = await newBuyer(s.facilitator, 5);
    const res = await buyer.pay(`${s.server.url}/api/x402/buy`, buyInit(1, { Authorization: `Bearer wid_mcp_${"b".repeat(43)}` }));
    assert.equal(res.status, 403);
    assert.equal(s.facilitator.token.balanceOf(buyer.address), 5_000_000n);
  });

  test("the CORS preflight allows PAYMENT-SIGNATURE", async () => {
    const res = await fetch(`${s.server.url}/api/x402/buy`, {
      method: "OPTIONS",
      headers: { Origin: "https://agent.example", "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type,payment-signature,access-control-expose-headers" },
    });
    assert.equal(res.status, 204);
    assert.match(res.headers.get("Access-Control-Allow-Headers") ?? "", /payment-signature/i);
    const plain = await fetch(`${s.server.url}/api/x402/buy`, { method: "OPTIONS" });
    assert.match(plain.headers.get("Access-Control-Allow-Headers") ?? "", /PAYMENT-SIGNATURE/);
    assert.match(plain.headers.get("Access-Control-Expose-Headers") ?? "", /PAYMENT-RESPONSE/);
  });

  test("the official client buys a key, uses it on GET /wallet and POST /jobs, tops it up, and recovers it", async () => {
    const { db } = get();
    await loadFixtures(db, new Date());
    const buyer = await newBuyer(s.facilitator, 100);

    const bought = await expectStatus(await buyer.pay(`${s.server.url}/api/x402/buy`, buyInit(2)), 200, "purchase");
    const body = bought.body;
    assert.match(body.api_key, /^wid_live_[A-Za-z0-9]{32}$/);
    assert.deepEqual({ ...body, api_key: "" }, {
      api_key: "",
      shown_once: true,
      matches_added: 24,
      quantity: 2,
      matches_available: 24,
      pack: "Agent",
      newly_granted: true,
    });
    const settlement = decodePaymentResponseHeader(bought.headers.get("PAYMENT-RESPONSE")!);
    assert.equal(settlement.success, true);
    assert.equal(settlement.payer?.toLowerCase(), buyer.address);
    assert.match(settlement.transaction, /^0x[0-9a-f]{64}$/);
    assert.equal(s.facilitator.token.balanceOf(buyer.address), 98_000_000n, "2 USDC left the buyer");
    assert.equal(s.facilitator.token.balanceOf(PAY_TO), 2_000_000n, "and reached X402_PAY_TO");

    // the ledger: one account without email or free allowance, not account-bound, one grant keyed by the payment
    const [payment] = await db.query<{ id: string; account_id: string; state: string; tx_hash: string }>(
      "SELECT id, account_id, state, tx_hash FROM x402_payments WHERE payer = $1",
      [buyer.address],
    );
    assert.equal(payment.state, "granted");
    assert.equal(payment.tx_hash, settlement.transaction);
    const [account] = await db.query("SELECT email, free_allowance, has_account FROM accounts WHERE id = $1", [payment.account_id]);
    assert.deepEqual({ ...account }, { email: null, free_allowance: false, has_account: false });
    const grants = await db.query("SELECT pack, matches, grant_key FROM credit_grants WHERE account_id = $1", [payment.account_id]);
    assert.deepEqual([...grants].map((g) => ({ ...g })), [{ pack: "Agent", matches: 24, grant_key: `x402:${payment.id}` }]);

    const key = body.api_key as string;
    const auth = { Authorization: `Bearer ${key}` };
    const wallet = await expectStatus(await fetch(`${s.server.url}/api/v1/wallet/${W.full}`, { headers: auth }), 200, "lookup");
    assert.equal(wallet.body.data.twitter.handle, "alice");
    const job = await expectStatus(
      await fetch(`${s.server.url}/api/v1/jobs`, { method: "POST", headers: { ...auth, "Content-Type": "application/json" }, body: JSON.stringify({ wallets: [W.full, W.farcasterOnly, W.neverSeen] }) }),
      202,
      "job",
    );
    assert.equal(job.body.data.status, "completed");
    const usage = await expectStatus(await fetch(`${s.server.url}/api/v1/usage`, { headers: auth }), 200, "usage");
    assert.equal(usage.body.data.key.plan, "Developer");
    assert.equal(usage.body.data.credits.on_free_allowance, false);
    assert.equal(usage.body.data.credits.available, 24 - 1 - 2, "the lookup billed 1, the job 2");
    const reverse = await expectStatus(await fetch(`${s.server.url}/api/v1/reverse/farcaster/alice`, { headers: auth }), 403, "reverse farcaster");
    assertErrorBody(reverse, "ACCOUNT_REQUIRED");

    // top-up: the key's account is credited, no key is minted
    const topup = await expectStatus(await buyer.pay(`${s.server.url}/api/x402/buy`, buyInit(1, auth)), 200, "top-up");
    assert.deepEqual(topup.body, {
      api_key: null,
      shown_once: false,
      matches_added: 12,
      quantity: 1,
      matches_available: 21 + 12,
      pack: "Agent",
      newly_granted: true,
      credited_to_key_prefix: key.slice(0, 12),
    });
    const keys = await db.query("SELECT id FROM api_keys WHERE account_id = $1 AND revoked_at IS NULL", [payment.account_id]);
    assert.equal(keys.length, 1, "a top-up mints no key");

    // recovery: a signed challenge gives a second key on the same credits
    const challenge = await expectStatus(await fetch(`${s.server.url}/api/x402/recover?wallet=${buyer.account.address}`), 200, "challenge");
    assert.match(challenge.body.message, /walletid/);
    assert.ok(challenge.body.message.includes(buyer.address), "the message names the wallet");
    assert.ok(challenge.body.message.includes(challenge.body.issued_at), "and the time");
    assert.ok(challenge.body.message.includes(PUBLIC_URL), "and the site");
    const signature = await buyer.account.signMessage({ message: challenge.body.message });
    const recovered = await expectStatus(
      await fetch(`${s.server.url}/api/x402/recover`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ wallet: buyer.account.address, issued_at: challenge.body.issued_at, token: challenge.body.token, signature }),
      }),
      200,
      "recovery",
    );
    assert.match(recovered.body.api_key, /^wid_live_[A-Za-z0-9]{32}$/);
    assert.equal(recovered.body.key_prefix, recovered.body.api_key.slice(0, 12));
    assert.deepEqual(recovered.body.revoked_prefixes, []);
    const again = await expectStatus(await fetch(`${s.server.url}/api/v1/usage`, { headers: { Authorization: recovered.body.api_key } }), 200);
    assert.equal(again.body.data.credits.available, 33, "the recovered key spends the same credits");
    const first = await expectStatus(await fetch(`${s.server.url}/api/v1/usage`, { headers: auth }), 200);
    assert.equal(first.body.data.credits.available, 33, "and the first key still works");
  });

  test("a later keyless purchase from the same wallet credits the wallet's account and mints another key", async () => {
    const { db } = get();
    const buyer = await newBuyer(s.facilitator, 10);
    const first = await expectStatus(await buyer.pay(`${s.server.url}/api/x402/buy`, buyInit(1)), 200, "first");
    const second = await expectStatus(await buyer.pay(`${s.server.url}/api/x402/buy`, buyInit(3)), 200, "second");
    assert.match(second.body.api_key, /^wid_live_/);
    assert.notEqual(second.body.api_key, first.body.api_key);
    assert.equal(second.body.matches_available, 48, "12 + 36 on one account");
    const accounts = await db.query("SELECT DISTINCT account_id FROM x402_payments WHERE payer = $1", [buyer.address]);
    assert.equal(accounts.length, 1);
    const usage = await expectStatus(await fetch(`${s.server.url}/api/v1/usage`, { headers: { Authorization: first.body.api_key } }), 200);
    assert.equal(usage.body.data.credits.available, 48, "both keys spend the same credits");
  });

  test("the OpenAPI document and /docs describe the three endpoints with their headers and errors", async () => {
    const doc = (await expectStatus(await fetch(`${s.server.url}/api/v1/openapi.json`), 200)).body;
    const buy = doc.paths["/api/x402/buy"].post;
    assert.deepEqual(doc.paths["/api/x402/buy"].servers.map((x: { url: string }) => x.url), [PUBLIC_URL]);
    assert.ok(buy.responses["402"].headers["PAYMENT-REQUIRED"], "402 carries PAYMENT-REQUIRED");
    assert.ok(buy.responses["200"].headers["PAYMENT-RESPONSE"], "200 carries PAYMENT-RESPONSE");
    assert.ok(buy.parameters.some((p: { name: string; in: string }) => p.name === "PAYMENT-SIGNATURE" && p.in === "header"));
    for (const status of ["400", "401", "402", "403", "409", "500", "503"]) assert.ok(buy.responses[status], `buy documents ${status}`);
    assert.ok(buy.responses["500"].content["application/json"].schema.properties.settlement, "the 500 documents settlement");
    assert.ok(doc.paths["/api/x402/recover"].get.responses["200"]);
    assert.ok(doc.paths["/api/x402/recover"].post.responses["409"]);
    const page = await (await fetch(`${s.server.url}/docs`)).text();
    assert.ok(page.includes("/api/x402/buy") && page.includes("/api/x402/recover"), "/docs lists them");
    assert.ok(page.includes("PAYMENT-REQUIRED") && page.includes("OAUTH_CANNOT_BUY"));
  });
});

eachDatabase("x402 purchases turned off", (get) => {
  test("without X402_FACILITATOR_URL the buy endpoint is 503 and the start log says so once", async () => {
    const logs: string[] = [];
    const app = createApp({ db: get().db, config: readConfig({ X402_PAY_TO: PAY_TO }), log: (line) => logs.push(line) });
    const res = await app.fetch(new Request("http://localhost/api/x402/buy", { method: "POST" }));
    assert.equal(res.status, 503);
    const body = await res.json();
    assert.equal(body.code, "SERVICE_UNAVAILABLE");
    assert.match(body.error, /Purchases are off/);
    assert.ok(res.headers.get("Retry-After"));
    assert.equal(logs.filter((l) => /Purchases are off/.test(l) && /X402_FACILITATOR_URL/.test(l)).length, 1, logs.join("\n"));
    await app.close();
  });
});
