// Metering under concurrency, in one server and across two on one database: an Idempotency-Key
// in flight makes other requests with the key wait and replay (or be refused), never run; the
// balance check is serialized with the debit, so concurrent calls overdraw by at most one
// call's matches; the same JSON written differently is the same idempotent request.
import { test } from "node:test";
import assert from "node:assert/strict";
import { eachDatabase } from "../support/db.ts";
import { createClock, createCustomer, serverPair } from "../support/server.ts";
import { address, debitedTotal, debitsOf, importIndex, rateWindowOf } from "../support/http.ts";
import { readCredits } from "../../src/ledger/accounts.ts";
import { sha256Hex } from "../../src/ledger/keys.ts";

/** Wallets with a twitter link: each one a batch sends bills one match. */
const billable = (i: number) => address(i, "b1");

eachDatabase("metering under concurrency", (get) => {
  const clock = createClock("2026-11-20T12:00:30Z");
  const servers = serverPair(get, clock, (db) => {
    const observed_at = new Date(clock.now().getTime() - 86_400_000).toISOString();
    return importIndex(
      db,
      Array.from({ length: 300 }, (_, i) => ({ wallet: billable(i), kind: "twitter", route: "x-signin", handle: `billable${i}`, observed_at })),
      clock.now(),
    );
  });

  /** The servers in turn, so concurrent requests spread over both processes where there are two. */
  const serverFor = (i: number) => servers[i % servers.length];

  function batch(i: number, key: string, wallets: string[], headers: Record<string, string> = {}, raw?: string) {
    return serverFor(i).request("/api/v1/batch", {
      method: "POST",
      key,
      headers: { "Content-Type": "application/json", ...headers },
      body: raw ?? JSON.stringify({ wallets }),
    });
  }

  async function customer(packs: number) {
    clock.advance(60_000);
    return await createCustomer(get().db, { packs: [{ pack: "Agent", quantity: packs }], now: clock.now() });
  }

  test("20 concurrent requests with one Idempotency-Key and 20 bodies: one runs, 19 are refused, one bill", async () => {
    const { apiKey, accountId } = await customer(10);
    const bodies = Array.from({ length: 20 }, (_, i) => [billable(2 * i), billable(2 * i + 1)]);
    const responses = await Promise.all(
      bodies.map(async (wallets, i) => {
        const res = await batch(i, apiKey, wallets, { "Idempotency-Key": "race-1" });
        return { i, status: res.status, body: await res.json() };
      }),
    );
    const ok = responses.filter((r) => r.status === 200);
    assert.equal(ok.length, 1, `exactly one ran: ${JSON.stringify(responses.map((r) => [r.status, r.body.code ?? r.body.meta]))}`);
    for (const r of responses.filter((r) => r.status !== 200)) {
      assert.equal(r.status, 409, JSON.stringify(r.body));
      assert.equal(r.body.code, "IDEMPOTENCY_KEY_REUSED");
    }
    const winner = ok[0];
    assert.deepEqual(winner.body.data.map((row: { wallet: string }) => row.wallet), bodies[winner.i]);
    assert.equal(await debitedTotal(get().db, accountId), 2, "the winner's two matches, once");
    assert.equal((await rateWindowOf(get().db, accountId))?.minute_used, 2, "rate units of one call");
  });

  test("50 concurrent same-body retries: one runs, 49 wait and replay it, no extra rate units or bills", async () => {
    const { apiKey, accountId } = await customer(10);
    const wallets = [billable(100), billable(101), billable(102)];
    const responses = await Promise.all(
      Array.from({ length: 50 }, async (_, i) => {
        const res = await batch(i, apiKey, wallets, { "Idempotency-Key": "retry-1" });
        return { status: res.status, replayed: res.headers.get("idempotent-replayed"), text: await res.text() };
      }),
    );
    for (const r of responses) assert.equal(r.status, 200, r.text);
    assert.equal(responses.filter((r) => r.replayed !== "true").length, 1, "one ran fresh");
    assert.equal(new Set(responses.map((r) => r.text)).size, 1, "all answers are the first's");
    assert.equal((await rateWindowOf(get().db, accountId))?.minute_used, 3, "one call's units");
    const debits = await debitsOf(get().db, accountId);
    assert.equal(debits.length, 1);
    assert.equal(debits[0].matches, 3);
  });

  test("a request waits while another holds the key's claim, then replays what it stored", async () => {
    const { db } = get();
    const { apiKey, accountId } = await customer(10);
    const wallets = [billable(110)];
    const body = JSON.stringify({ wallets });
    const stored = JSON.stringify({ data: [], meta: { requested: 1, found: 0, not_found: 1, matched: 0 } });
    // another process holds the claim (what meter_call writes for an ok call under a key)
    await db.query(
      `INSERT INTO idempotent_responses (account_id, idem_key, request_hash, created_at, claim_token, claimed_until)
       VALUES ($1, 'held-1', $2, $3, 'other', $3::timestamptz + interval '15 seconds')`,
      [accountId, await sha256Hex(body), clock.now()],
    );
    let answered = false;
    const waiting = batch(0, apiKey, wallets, { "Idempotency-Key": "held-1" }).then(async (res) => {
      answered = true;
      return { status: res.status, replayed: res.headers.get("idempotent-replayed"), text: await res.text() };
    });
    await new Promise((r) => setTimeout(r, 400));
    assert.equal(answered, false, "it waits while the claim is held");
    await db.query(
      `UPDATE idempotent_responses SET status = 200, body = $2, claim_token = NULL, claimed_until = NULL
        WHERE account_id = $1 AND idem_key = 'held-1'`,
      [accountId, stored],
    );
    const res = await waiting;
    assert.equal(res.status, 200, res.text);
    assert.equal(res.replayed, "true");
    assert.equal(res.text, stored);
    assert.equal(await debitedTotal(db, accountId), 0, "the waiter never ran");
    assert.equal((await rateWindowOf(db, accountId))?.minute_used ?? 0, 0);
  });

  test("the claim of a request whose process died expires: the next request with the key runs", async () => {
    const { db } = get();
    const { apiKey, accountId } = await customer(10);
    await db.query(
      `INSERT INTO idempotent_responses (account_id, idem_key, request_hash, created_at, claim_token, claimed_until)
       VALUES ($1, 'dead-1', 'whatever', $2, 'dead', $2::timestamptz + interval '15 seconds')`,
      [accountId, clock.now()],
    );
    clock.advance(16_000);
    const res = await batch(0, apiKey, [billable(120)], { "Idempotency-Key": "dead-1" });
    assert.equal(res.status, 200, await res.clone().text());
    assert.equal(res.headers.get("idempotent-replayed"), null);
    assert.equal(await debitedTotal(db, accountId), 1);
    const again = await batch(1, apiKey, [billable(120)], { "Idempotency-Key": "dead-1" });
    assert.equal(again.headers.get("idempotent-replayed"), "true");
    assert.equal(await debitedTotal(db, accountId), 1);
  });

  test("a request refused after metering gives its claim back: a retry with the key runs", async () => {
    const { db } = get();
    const { apiKey, accountId } = await customer(1);
    // 51 addresses on a plan of 50: refused whole, the key is free again
    const tooMany = Array.from({ length: 51 }, (_, i) => billable(i));
    const refused = await batch(0, apiKey, tooMany, { "Idempotency-Key": "refused-1" });
    assert.equal(refused.status, 400);
    const res = await batch(1, apiKey, [billable(130)], { "Idempotency-Key": "refused-1" });
    assert.equal(res.status, 200, await res.clone().text());
    assert.equal(res.headers.get("idempotent-replayed"), null);
    assert.equal(await debitedTotal(db, accountId), 1);
  });

  test("the same JSON with other whitespace and key order is the same idempotent request", async () => {
    const { db } = get();
    const { apiKey, accountId } = await customer(10);
    const wallets = [billable(140), billable(141)];
    const first = await batch(0, apiKey, wallets, { "Idempotency-Key": "canon-1" }, JSON.stringify({ wallets, note: { b: 1, a: [1, 2] } }));
    assert.equal(first.status, 200, await first.clone().text());
    const spaced = `{\n  "note" : { "a" : [ 1 , 2 ], "b" : 1.0 },\n  "wallets" : [ "${wallets[0]}" ,\t"${wallets[1]}" ]\n}\n`;
    const again = await batch(1, apiKey, wallets, { "Idempotency-Key": "canon-1" }, spaced);
    assert.equal(again.status, 200, await again.clone().text());
    assert.equal(again.headers.get("idempotent-replayed"), "true");
    assert.equal(await again.text(), await first.text());
    // a different order of the list is a different request
    const reordered = await batch(0, apiKey, [...wallets].reverse(), { "Idempotency-Key": "canon-1" });
    assert.equal(reordered.status, 409);
    assert.equal(await debitedTotal(db, accountId), 2);
  });

  test("12 concurrent 5-wallet batches on 12 credits overdraw by at most one call's matches", async () => {
    const { db } = get();
    const { apiKey, accountId } = await customer(1);
    const responses = await Promise.all(
      Array.from({ length: 12 }, async (_, i) => {
        const res = await batch(i, apiKey, Array.from({ length: 5 }, (_, j) => billable(150 + 5 * i + j)));
        return { status: res.status, text: await res.text() };
      }),
    );
    const ok = responses.filter((r) => r.status === 200).length;
    for (const r of responses) assert.ok(r.status === 200 || r.status === 402, r.text);
    const debited = await debitedTotal(db, accountId);
    assert.equal(debited, 5 * ok);
    // each call saw the debits before it: 12 -> 7 -> 2 -> -3, then NO_CREDITS
    assert.equal(ok, 3, `admitted ${ok}, debited ${debited}`);
    assert.ok(debited <= 12 + 5, `overdraw at most one call's 5 matches: debited ${debited}`);
    assert.equal((await readCredits(db, accountId, clock.now())).available, 0);
  });
});
