// POST /estimate: counts and a billing band, never identities; free at any balance; low is
// exactly what a batch of the same list bills.
import { test } from "node:test";
import assert from "node:assert/strict";
import { eachDatabase } from "../support/db.ts";
import { createCustomer, fixtureSuite } from "../support/server.ts";
import { W } from "../support/fixtures.ts";
import { address, assertErrorBody, assertNoRateHeaders, debitedTotal, expectStatus, rateHeaders, rateWindowOf, setRateWindow } from "../support/http.ts";
import { MATCH_RATES } from "../../src/index/match-rates.ts";

// 7 billable (twitter or farcaster, whatever the route), 2 found without a billable identity (ens-only, agent), 1 checked empty
const INDEXED = [W.full, W.selfDeclared, W.twoHandles, W.corrected, W.stale, W.farcasterOnly, W.ensOnly, W.agent, W.unclassified, W.empty];

eachDatabase("POST /estimate", (get) => {
  const suite = fixtureSuite(get);
  const { clock, nextMinute } = suite;

  function estimate(body: unknown, options: { key?: string } = {}) {
    return suite.server.request("/api/v1/estimate", {
      method: "POST",
      key: options.key ?? suite.key,
      headers: { "Content-Type": "application/json" },
      body: typeof body === "string" ? body : JSON.stringify(body),
    });
  }

  test("counts: requested, in_index, previously_checked_empty, never_checked and the billing band", async () => {
    nextMinute();
    const { db } = get();
    const neverSeen = Array.from({ length: 20 }, (_, i) => address(i + 1, "e"));
    const list = [...INDEXED, ...neverSeen, W.full.toUpperCase().replace("0X", "0x"), W.neverSeen];
    const billed = await debitedTotal(db, suite.accountId);
    const res = await expectStatus(await estimate({ wallets: list }), 200);
    const high = 7 + Math.ceil((21 * MATCH_RATES.overall_either_pct) / 100);
    assert.deepEqual(res.body.data, {
      requested: 31,
      in_index: 9,
      previously_checked_empty: 1,
      never_checked: 21,
      would_bill_estimate: { low: 7, high, note: res.body.data.would_bill_estimate.note },
    });
    assert.match(res.body.data.would_bill_estimate.note, /never-checked/);
    assert.equal(res.body.meta.billable_predicate, "x_or_farcaster");
    assert.equal(res.body.meta.generated_at, clock.now().toISOString());
    assert.ok(!res.text.includes("alice"), "counts only, never identities");
    assert.equal(await debitedTotal(db, suite.accountId), billed, "free");
    assert.equal(rateHeaders(res).remaining, 60 - 32, "1 rate unit per address submitted");
  });

  test("low equals meta.matched of a batch of the same list run right after, and what that batch bills", async () => {
    nextMinute();
    const { db } = get();
    const list = [...INDEXED, W.aggregated, W.agentWithHuman, address(1, "e"), address(2, "e")];
    const est = await expectStatus(await estimate({ wallets: list }), 200);
    const billed = await debitedTotal(db, suite.accountId);
    const batch = await expectStatus(
      await suite.server.request("/api/v1/batch", { method: "POST", key: suite.key, headers: { "Content-Type": "application/json" }, body: JSON.stringify({ wallets: list }) }),
      200,
    );
    assert.equal(est.body.data.would_bill_estimate.low, batch.body.meta.matched);
    assert.equal(est.body.data.would_bill_estimate.low, 9);
    assert.equal((await debitedTotal(db, suite.accountId)) - billed, batch.body.meta.matched);
    assert.equal(est.body.data.in_index, batch.body.meta.found);
  });

  test("works at zero balance", async () => {
    nextMinute();
    const { db } = get();
    const broke = await createCustomer(db, { now: clock.now() });
    const res = await expectStatus(await estimate({ wallets: INDEXED }, { key: broke.apiKey }), 200);
    assert.equal(res.body.data.would_bill_estimate.low, 7);
    assert.equal(await debitedTotal(db, broke.accountId), 0);
    assert.equal((await rateWindowOf(db, broke.accountId))!.minute_used, 10);
  });

  test("LIST_TOO_SMALL under 10 distinct addresses (duplicates do not count), free, with rate-limit headers", async () => {
    nextMinute();
    const windowBefore = await rateWindowOf(get().db, suite.accountId);
    const nine = INDEXED.slice(0, 9);
    const res = await expectStatus(await estimate({ wallets: [...nine, ...nine] }), 400);
    assertErrorBody(res, "LIST_TOO_SMALL");
    assert.match(res.body.error, /9 distinct/);
    assert.match(res.body.error, /at least 10/);
    rateHeaders(res);
    assert.deepEqual(await rateWindowOf(get().db, suite.accountId), windowBefore);
  });

  test("BATCH_SIZE_EXCEEDED names the plan ceiling; nothing is counted", async () => {
    nextMinute();
    const windowBefore = await rateWindowOf(get().db, suite.accountId);
    const list = Array.from({ length: 51 }, (_, i) => address(i + 1, "f"));
    const res = await expectStatus(await estimate({ wallets: list }), 400);
    assertErrorBody(res, "BATCH_SIZE_EXCEEDED");
    assert.match(res.body.error, /maximum on the Developer plan is 50/);
    assert.deepEqual(await rateWindowOf(get().db, suite.accountId), windowBefore);
    // fifty distinct with duplicates beyond is within the ceiling
    const fifty = await expectStatus(await estimate({ wallets: [...list.slice(0, 50), list[0]] }), 200);
    assert.equal(fifty.body.data.requested, 50);
  });

  test("INVALID_ADDRESS names the bad entries; INVALID_REQUEST and 413 come before authentication", async () => {
    nextMinute();
    const bad = await expectStatus(await estimate({ wallets: [...INDEXED, "0x1234", 7] }), 400);
    assertErrorBody(bad, "INVALID_ADDRESS");
    assert.match(bad.body.error, /"0x1234", 7/);
    rateHeaders(bad);

    for (const body of ["{not json", JSON.stringify({}), JSON.stringify({ wallets: "0xabc" }), JSON.stringify({ wallets: [] })]) {
      const res = await expectStatus(await estimate(body, { key: "not-a-key" }), 400, body);
      assertErrorBody(res, "INVALID_REQUEST");
      assertNoRateHeaders(res);
    }
    const huge = JSON.stringify({ wallets: Array.from({ length: 25_000 }, (_, i) => address(i, "9")) });
    const tooLarge = await expectStatus(await estimate(huge), 413);
    assertErrorBody(tooLarge, "INVALID_REQUEST");
    assert.match(tooLarge.body.error, /too large/);
  });

  test("rate weight is every address sent: 12 sent with 50 of 60 units used is 429", async () => {
    nextMinute();
    const { db } = get();
    const now = clock.now();
    const minute = new Date(now.getTime() - (now.getTime() % 60_000)).toISOString();
    await setRateWindow(db, suite.accountId, {
      minuteStart: minute,
      minuteUsed: 50,
      dayStart: `${minute.slice(0, 10)}T00:00:00.000Z`,
      dayUsed: 50,
      monthStart: `${minute.slice(0, 7)}-01T00:00:00.000Z`,
      monthUsed: 50,
    });
    const res = await expectStatus(await estimate({ wallets: [...INDEXED, W.full, W.full] }), 429);
    assertErrorBody(res, "RATE_LIMITED");
    await expectStatus(await estimate({ wallets: INDEXED }), 200, "ten fit exactly");
  });

  test("no key: 401", async () => {
    const res = await expectStatus(
      await suite.server.request("/api/v1/estimate", { method: "POST", body: JSON.stringify({ wallets: INDEXED }) }),
      401,
    );
    assertErrorBody(res, "UNAUTHORIZED");
    const wrongMethod = await expectStatus(await suite.server.request("/api/v1/estimate", { key: suite.key }), 405);
    assertErrorBody(wrongMethod, "METHOD_NOT_ALLOWED");
  });
});
