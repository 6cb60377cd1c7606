// Payments that must grant nothing, signed by hand (viem EIP-712, encoded by @x402/core) against
// the local facilitator running the real @x402/evm scheme: after every refusal the ledger is read
// and is unchanged, and no money moved. Then replays: a replay of a granted payment reports it with
// newly_granted false, and 50 concurrent submissions of one signed payment grant exactly one pack.
import assert from "node:assert/strict";
import { test } from "node:test";
import { decodePaymentRequiredHeader } from "@x402/core/http";
import { safeBase64Encode } from "@x402/core/utils";
import type { Hex } from "viem";
import { eachDatabase } from "../support/db.ts";
import { assertErrorBody, expectStatus } from "../support/http.ts";
import { buyInit, lastSignature, ledgerSnapshot, newBuyer, PAY_TO, purchaseSuite, signPayment, type Buyer } from "./support.ts";

eachDatabase("x402 refused payments", (get) => {
  const s = purchaseSuite(get);
  let buyer: Buyer;

  async function refused(header: string, status: number, reason: string, what: string, quantity = 1) {
    const before = await ledgerSnapshot(get().db);
    const balances = [s.facilitator.token.balanceOf(buyer.address), s.facilitator.token.balanceOf(PAY_TO)];
    const res = await expectStatus(await fetch(`${s.server.url}/api/x402/buy`, buyInit(quantity, { "PAYMENT-SIGNATURE": header })), status, what);
    if (status === 402) {
      assertErrorBody(res, "PAYMENT_REQUIRED");
      const challenge = decodePaymentRequiredHeader(res.headers.get("PAYMENT-REQUIRED")!);
      assert.equal(challenge.error, reason, `${what}: the challenge says why`);
      assert.equal(challenge.accepts[0].amount, String(quantity * 1_000_000), `${what}: a fresh challenge for the quantity`);
    } else {
      assertErrorBody(res, reason);
    }
    assert.deepEqual(await ledgerSnapshot(get().db), before, `${what}: the ledger is unchanged`);
    assert.deepEqual([s.facilitator.token.balanceOf(buyer.address), s.facilitator.token.balanceOf(PAY_TO)], balances, `${what}: no money moved`);
  }

  test("malformed PAYMENT-SIGNATURE headers are 400 INVALID_PAYMENT", async () => {
    buyer = await newBuyer(s.facilitator, 50);
    await refused("not base64 at all!", 400, "INVALID_PAYMENT", "not base64");
    await refused(safeBase64Encode("{not json"), 400, "INVALID_PAYMENT", "not JSON");
    await refused(safeBase64Encode(JSON.stringify({ x402Version: 1, scheme: "exact", network: "base", payload: {} })), 400, "INVALID_PAYMENT", "a v1 payload");
    const valid = await signPayment(buyer.account);
    const payload = JSON.parse(Buffer.from(valid.header, "base64").toString());
    payload.payload.authorization.nonce = "0x1234";
    await refused(safeBase64Encode(JSON.stringify(payload)), 400, "INVALID_PAYMENT", "a short nonce");
  });

  test("underpaid, overpaid, wrong recipient, wrong asset, wrong network: refused with a fresh challenge", async () => {
    await refused((await signPayment(buyer.account, { value: "999999" })).header, 402, "invalid_exact_evm_payload_authorization_value_mismatch", "underpaid");
    await refused(
      (await signPayment(buyer.account, { value: "999999", accepted: { amount: "999999" } })).header,
      402,
      "no_matching_payment_requirements",
      "underpaid, with the echo altered to match",
    );
    await refused((await signPayment(buyer.account, { value: "2000000" })).header, 402, "invalid_exact_evm_payload_authorization_value_mismatch", "overpaid");
    await refused((await signPayment(buyer.account, { quantity: 2 })).header, 402, "no_matching_payment_requirements", "paid for 2 packs, asked for 1");
    const stranger = "0x00000000000000000000000000000000000bad01";
    await refused((await signPayment(buyer.account, { to: stranger })).header, 402, "invalid_exact_evm_recipient_mismatch", "wrong recipient");
    await refused((await signPayment(buyer.account, { to: stranger, accepted: { payTo: stranger } })).header, 402, "no_matching_payment_requirements", "wrong payTo in the echo");
    const otherToken = "0x036CbD53842c5426634e7929541eC2318f3dCF7e" as Hex;
    await refused(
      (await signPayment(buyer.account, { domain: { verifyingContract: otherToken }, accepted: { asset: otherToken } })).header,
      402,
      "no_matching_payment_requirements",
      "wrong asset",
    );
    await refused(
      (await signPayment(buyer.account, { domain: { chainId: 84532 }, accepted: { network: "eip155:84532" } })).header,
      402,
      "no_matching_payment_requirements",
      "wrong network",
    );
    await refused((await signPayment(buyer.account, { domain: { chainId: 84532 } })).header, 402, "invalid_exact_evm_signature", "signed for another chain");
  });

  test("expired, not yet valid, wrong EIP-712 domain, a signature by another wallet, no funds: refused", async () => {
    const now = Math.floor(Date.now() / 1000);
    await refused((await signPayment(buyer.account, { validBefore: now - 10 })).header, 402, "invalid_exact_evm_payload_authorization_valid_before", "expired");
    await refused((await signPayment(buyer.account, { validBefore: now + 3 })).header, 402, "invalid_exact_evm_payload_authorization_valid_before", "expiring within 6 seconds");
    await refused((await signPayment(buyer.account, { validAfter: now + 300 })).header, 402, "invalid_exact_evm_payload_authorization_valid_after", "not yet valid");
    await refused((await signPayment(buyer.account, { domain: { name: "USDC" } })).header, 402, "invalid_exact_evm_signature", "wrong domain name");
    await refused((await signPayment(buyer.account, { domain: { version: "1" } })).header, 402, "invalid_exact_evm_signature", "wrong domain version");
    // a payload claiming to come from the buyer, signed by someone else
    const thief = await newBuyer(s.facilitator, 0);
    const forged = await signPayment(thief.account);
    const payload = JSON.parse(Buffer.from(forged.header, "base64").toString());
    payload.payload.authorization.from = buyer.account.address;
    await refused(safeBase64Encode(JSON.stringify(payload)), 402, "invalid_exact_evm_signature", "signed by another wallet");
    // a wallet without the funds
    const broke = await newBuyer(s.facilitator, 0);
    const before = await ledgerSnapshot(get().db);
    const res = await expectStatus(await fetch(`${s.server.url}/api/x402/buy`, buyInit(1, { "PAYMENT-SIGNATURE": (await signPayment(broke.account)).header })), 402, "no funds");
    assert.equal(decodePaymentRequiredHeader(res.headers.get("PAYMENT-REQUIRED")!).error, "invalid_exact_evm_insufficient_balance");
    assert.deepEqual(await ledgerSnapshot(get().db), before);
  });

  test("a replay of a granted payment answers newly_granted false, no key, and grants nothing", async () => {
    const { db } = get();
    const bought = await expectStatus(await buyer.pay(`${s.server.url}/api/x402/buy`, buyInit(1)), 200, "purchase");
    assert.equal(bought.body.newly_granted, true);
    const header = lastSignature(buyer);
    const before = await ledgerSnapshot(db);
    const balance = s.facilitator.token.balanceOf(buyer.address);
    for (let i = 0; i < 3; i++) {
      const replay = await expectStatus(await fetch(`${s.server.url}/api/x402/buy`, buyInit(1, { "PAYMENT-SIGNATURE": header })), 200, "replay");
      assert.deepEqual(replay.body, {
        api_key: null,
        shown_once: false,
        matches_added: 12,
        quantity: 1,
        matches_available: 12,
        pack: "Agent",
        newly_granted: false,
      });
      assert.ok(replay.headers.get("PAYMENT-RESPONSE"), "with the settlement");
    }
    assert.deepEqual(await ledgerSnapshot(db), before, "replays change nothing");
    assert.equal(s.facilitator.token.balanceOf(buyer.address), balance, "and move no money");
    // the same authorization sent for another quantity is not this server's requirement
    await refused(header, 402, "no_matching_payment_requirements", "replayed with another quantity", 2);
    // another signature over the used nonce learns nothing about the purchase
    const used = JSON.parse(Buffer.from(header, "base64").toString());
    const sameNonce = await signPayment(buyer.account, { nonce: used.payload.authorization.nonce, validBefore: Number(used.payload.authorization.validBefore) - 1 });
    await refused(sameNonce.header, 402, "authorization_already_used", "another signature over a used nonce");
  });

  test("50 concurrent submissions of one signed payment grant exactly one pack", async () => {
    const { db } = get();
    const racer = await newBuyer(s.facilitator, 10);
    const { header } = await signPayment(racer.account, { quantity: 3 });
    const responses = await Promise.all(
      Array.from({ length: 50 }, async () => {
        const res = await fetch(`${s.server.url}/api/x402/buy`, buyInit(3, { "PAYMENT-SIGNATURE": header }));
        return { status: res.status, body: await res.json() };
      }),
    );
    const statuses = responses.map((r) => r.status);
    assert.deepEqual([...new Set(statuses)], [200], `every submission answers 200: ${JSON.stringify(responses.filter((r) => r.status !== 200).slice(0, 2))}`);
    const granted = responses.filter((r) => r.body.newly_granted);
    assert.equal(granted.length, 1, "exactly one is newly granted");
    assert.match(granted[0].body.api_key, /^wid_live_/);
    assert.ok(responses.filter((r) => !r.body.newly_granted).every((r) => r.body.api_key === null && r.body.matches_available === 36));
    const grants = await db.query(
      "SELECT g.matches FROM credit_grants g JOIN x402_wallets w ON w.account_id = g.account_id WHERE w.wallet = $1",
      [racer.address],
    );
    assert.deepEqual([...grants].map((g) => g.matches), [36], "one grant of 3 packs");
    const keys = await db.query("SELECT k.id FROM api_keys k JOIN x402_wallets w ON w.account_id = k.account_id WHERE w.wallet = $1", [racer.address]);
    assert.equal(keys.length, 1, "one key");
    assert.equal(s.facilitator.token.balanceOf(racer.address), 7_000_000n, "paid once");
  });
});
