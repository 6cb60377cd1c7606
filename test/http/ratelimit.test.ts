// Rate-limit windows through a real listening server: the X-RateLimit-* headers, 429 with
// Retry-After, window resets on the injected clock, plan presets from packs, weight-0 endpoints,
// and (on PostgreSQL) windows shared by two server processes on one database.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { openDatabase } from "../../src/db/open.ts";
import { eachDatabase } from "../support/db.ts";
import { createClock, createCustomer, startServer, type TestServer } from "../support/server.ts";
import {
  address,
  assertErrorBody,
  assertNoRateHeaders,
  batchInit,
  debitsOf,
  epochSeconds,
  expectStatus,
  importIndex,
  rateHeaders,
  rateWindowOf,
  setRateWindow,
} from "../support/http.ts";

const START = "2026-11-20T12:00:30Z";
const BILLABLE = address(1, "b");
const UNKNOWN = address(1, "c");

function lookup(server: TestServer, key: string, wallet: string) {
  return server.request(`/api/v1/wallet/${wallet}`, { key });
}

/** n distinct never-seen addresses (batches of them bill nothing). */
function unknownList(n: number, offset = 0): string[] {
  return Array.from({ length: n }, (_, i) => address(offset + i + 1, "d"));
}

eachDatabase("rate limits", (get) => {
  let server: TestServer;

  before(async () => {
    server = await startServer(get().db, { clock: createClock(START) });
    await importIndex(get().db, [{ wallet: BILLABLE, kind: "twitter", route: "x-signin", handle: "billable" }], new Date(START));
  });
  after(async () => {
    await server.close();
  });

  test("the three headers describe the minute window on a 200 and on a 400 INVALID_ADDRESS", async () => {
    server.clock.set(START);
    const c = await createCustomer(get().db, { packs: [{ pack: "Agent" }], now: server.clock.now() });

    const ok = await expectStatus(await lookup(server, c.apiKey, UNKNOWN), 200);
    assert.deepEqual(rateHeaders(ok), { limit: 60, remaining: 59, reset: epochSeconds("2026-11-20T12:01:00Z") });

    const bad = await expectStatus(await lookup(server, c.apiKey, "0x1234"), 400);
    assertErrorBody(bad, "INVALID_ADDRESS");
    // a malformed address costs nothing, so remaining is unchanged
    assert.deepEqual(rateHeaders(bad), { limit: 60, remaining: 59, reset: epochSeconds("2026-11-20T12:01:00Z") });

    const batch = await expectStatus(await server.request("/api/v1/batch", batchInit(c.apiKey, unknownList(3))), 200);
    assert.deepEqual(rateHeaders(batch), { limit: 60, remaining: 56, reset: epochSeconds("2026-11-20T12:01:00Z") });

    const w = await rateWindowOf(get().db, c.accountId);
    assert.equal(w?.minute_used, 4, "1 lookup + 3 batch addresses; the 400 consumed nothing");
    assert.equal(w?.day_used, 4);
    assert.equal(w?.month_used, 4);
  });

  test("no rate-limit headers on a 401 or on batch rejections that happen before authentication", async () => {
    server.clock.set(START);
    const c = await createCustomer(get().db, { packs: [{ pack: "Agent" }], now: server.clock.now() });

    const noKey = await expectStatus(await server.request(`/api/v1/wallet/${UNKNOWN}`), 401);
    assertErrorBody(noKey, "UNAUTHORIZED");
    assertNoRateHeaders(noKey);

    const wrongKey = await expectStatus(await lookup(server, `wid_live_${"x".repeat(32)}`, UNKNOWN), 401);
    assertErrorBody(wrongKey, "UNAUTHORIZED");
    assertNoRateHeaders(wrongKey);

    // over 1 MiB, sent with a valid key: still refused before the key is looked at
    const huge = JSON.stringify({ wallets: Array.from({ length: 30_000 }, () => UNKNOWN) });
    assert.ok(huge.length > 1024 * 1024);
    const tooLarge = await expectStatus(
      await server.request("/api/v1/batch", { method: "POST", key: c.apiKey, body: huge, headers: { "Content-Type": "application/json" } }),
      413,
    );
    assertErrorBody(tooLarge, "INVALID_REQUEST");
    assertNoRateHeaders(tooLarge);
    // the rest of the body is never read, so the connection must not be reused
    assert.equal(tooLarge.headers.get("Connection"), "close", tooLarge.text);

    const notJson = await expectStatus(
      await server.request("/api/v1/batch", { method: "POST", key: c.apiKey, body: "{wallets: [", headers: { "Content-Type": "application/json" } }),
      400,
    );
    assertErrorBody(notJson, "INVALID_REQUEST");
    assertNoRateHeaders(notJson);

    const noKeyBatch = await expectStatus(
      await server.request("/api/v1/batch", { method: "POST", body: "not json" }),
      400,
    );
    assertErrorBody(noKeyBatch, "INVALID_REQUEST");
    assertNoRateHeaders(noKeyBatch);

    assert.equal(await rateWindowOf(get().db, c.accountId), undefined, "nothing was counted for pre-auth rejections");
  });

  test("Developer: the 61st lookup in a minute is 429 with Retry-After to the next minute, and is not debited", async () => {
    server.clock.set(START); // 30 seconds into the minute
    const c = await createCustomer(get().db, { packs: [{ pack: "Agent" }], now: server.clock.now() });

    for (let i = 1; i <= 60; i++) {
      const res = await expectStatus(await lookup(server, c.apiKey, UNKNOWN), 200, `lookup ${i}`);
      assert.equal(rateHeaders(res).remaining, 60 - i);
    }
    assert.equal((await rateWindowOf(get().db, c.accountId))?.minute_used, 60);

    const limited = await expectStatus(await lookup(server, c.apiKey, BILLABLE), 429, "lookup 61");
    assertErrorBody(limited, "RATE_LIMITED");
    assert.equal(limited.headers.get("Retry-After"), "30", `seconds to 12:01:00: ${limited.text}`);

    assert.deepEqual(await debitsOf(get().db, c.accountId), [], "a refused billable lookup debits nothing");
    const w = await rateWindowOf(get().db, c.accountId);
    assert.equal(w?.minute_used, 60, "a refused call is not counted");
    assert.equal(w?.day_used, 60);

    // a quarter second later the wait is rounded up, never down to zero
    server.clock.set("2026-11-20T12:00:59.750Z");
    const late = await expectStatus(await lookup(server, c.apiKey, BILLABLE), 429);
    assert.equal(late.headers.get("Retry-After"), "1", late.text);

    // the next minute starts afresh; the billable lookup now succeeds and bills 1
    server.clock.set("2026-11-20T12:01:00Z");
    const fresh = await expectStatus(await lookup(server, c.apiKey, BILLABLE), 200);
    assert.deepEqual(rateHeaders(fresh), { limit: 60, remaining: 59, reset: epochSeconds("2026-11-20T12:02:00Z") });
    const debits = await debitsOf(get().db, c.accountId);
    assert.equal(debits.length, 1, JSON.stringify(debits));
    assert.equal(debits[0].matches, 1);
    const after = await rateWindowOf(get().db, c.accountId);
    assert.equal(after?.minute_used, 1);
    assert.equal(after?.day_used, 61);
    assert.equal(after?.month_used, 61);
  });

  test("a batch of 50 then another batch of 50 in the same minute: the second is 429; the next minute resets", async () => {
    server.clock.set("2026-11-20T12:10:05Z");
    const c = await createCustomer(get().db, { packs: [{ pack: "Agent" }], now: server.clock.now() });

    const first = await expectStatus(await server.request("/api/v1/batch", batchInit(c.apiKey, unknownList(50))), 200);
    assert.deepEqual(rateHeaders(first), { limit: 60, remaining: 10, reset: epochSeconds("2026-11-20T12:11:00Z") });
    assert.equal(first.body.meta.requested, 50, first.text);
    // the IETF fields (draft-ietf-httpapi-ratelimit-headers-11) for all three windows; November has 30 days
    const policy = first.headers.get("RateLimit-Policy") ?? "";
    assert.match(policy, /^"minute";q=60;w=60, "day";q=\d+;w=86400, "month";q=\d+;w=2592000$/, policy);
    const [, dayQuota, monthQuota] = /"day";q=(\d+);.*"month";q=(\d+);/.exec(policy)!;
    assert.equal(
      first.headers.get("RateLimit"),
      `"minute";r=10;t=55, "day";r=${Number(dayQuota) - 50};t=${epochSeconds("2026-11-21T00:00:00Z") - epochSeconds("2026-11-20T12:10:05Z")}, "month";r=${Number(monthQuota) - 50};t=${epochSeconds("2026-12-01T00:00:00Z") - epochSeconds("2026-11-20T12:10:05Z")}`,
    );

    server.clock.advance(20_000);
    const second = await expectStatus(await server.request("/api/v1/batch", batchInit(c.apiKey, unknownList(50, 50))), 429);
    assertErrorBody(second, "RATE_LIMITED");
    assert.equal(second.headers.get("Retry-After"), "35", second.text);
    assert.match(second.body.error, /this request weighs 50 units and 10 of 60 remain in the minute window/, second.text);
    assert.match(second.headers.get("RateLimit") ?? "", /^"minute";r=10;t=35,/, "the refusal shows what is left");
    assert.equal((await rateWindowOf(get().db, c.accountId))?.minute_used, 50, "the refused batch counted nothing");

    // the 10 units left still fit
    await expectStatus(await server.request("/api/v1/batch", batchInit(c.apiKey, unknownList(10, 100))), 200);
    assert.equal((await rateWindowOf(get().db, c.accountId))?.minute_used, 60);

    server.clock.set("2026-11-20T12:11:00.001Z");
    const third = await expectStatus(await server.request("/api/v1/batch", batchInit(c.apiKey, unknownList(50, 50))), 200);
    assert.deepEqual(rateHeaders(third), { limit: 60, remaining: 10, reset: epochSeconds("2026-11-20T12:12:00Z") });
    const w = await rateWindowOf(get().db, c.accountId);
    assert.equal(w?.minute_used, 50);
    assert.equal(w?.day_used, 110);
    assert.equal(w?.month_used, 110);
    assert.equal(w?.minute_start.toISOString(), "2026-11-20T12:11:00.000Z");
  });

  test("the day window is reported once it is the closest to exhaustion, and its exhaustion waits until midnight UTC", async () => {
    server.clock.set("2026-11-20T22:30:30Z");
    const c = await createCustomer(get().db, { packs: [{ pack: "Agent" }], now: server.clock.now() });

    // earlier today: 4940 units, none of them this minute
    await setRateWindow(get().db, c.accountId, {
      minuteStart: "2026-11-20T22:29:00Z",
      minuteUsed: 60,
      dayStart: "2026-11-20T00:00:00Z",
      dayUsed: 4940,
      monthStart: "2026-11-01T00:00:00Z",
      monthUsed: 20000,
    });

    // minute 59 left, day 59 left: a tie goes to the shorter window
    const tie = await expectStatus(await lookup(server, c.apiKey, UNKNOWN), 200);
    assert.deepEqual(rateHeaders(tie), { limit: 60, remaining: 59, reset: epochSeconds("2026-11-20T22:31:00Z") });

    // a minute later: minute 59 left, day 58 left, so the day is reported
    server.clock.set("2026-11-20T22:31:10Z");
    const next = await expectStatus(await lookup(server, c.apiKey, UNKNOWN), 200);
    assert.deepEqual(rateHeaders(next), { limit: 5000, remaining: 58, reset: epochSeconds("2026-11-21T00:00:00Z") });

    const batch = await expectStatus(await server.request("/api/v1/batch", batchInit(c.apiKey, unknownList(10))), 200);
    assert.deepEqual(rateHeaders(batch), { limit: 5000, remaining: 48, reset: epochSeconds("2026-11-21T00:00:00Z") });
    let w = await rateWindowOf(get().db, c.accountId);
    assert.equal(w?.minute_used, 11);
    assert.equal(w?.day_used, 4952);
    assert.equal(w?.month_used, 20012);

    // spend the rest of the day, then the day window refuses until midnight UTC
    const rest = await expectStatus(await server.request("/api/v1/batch", batchInit(c.apiKey, unknownList(48))), 200);
    assert.deepEqual(rateHeaders(rest), { limit: 5000, remaining: 0, reset: epochSeconds("2026-11-21T00:00:00Z") });
    w = await rateWindowOf(get().db, c.accountId);
    assert.equal(w?.minute_used, 59);
    assert.equal(w?.day_used, 5000);
    server.clock.set("2026-11-20T22:32:00Z");
    const limited = await expectStatus(await lookup(server, c.apiKey, UNKNOWN), 429);
    assertErrorBody(limited, "RATE_LIMITED");
    assert.equal(limited.headers.get("Retry-After"), String(88 * 60), `seconds to 2026-11-21T00:00:00Z: ${limited.text}`);
    assert.equal((await rateWindowOf(get().db, c.accountId))?.day_used, 5000);

    server.clock.set("2026-11-21T00:00:00Z");
    const tomorrow = await expectStatus(await lookup(server, c.apiKey, UNKNOWN), 200);
    assert.deepEqual(rateHeaders(tomorrow), { limit: 60, remaining: 59, reset: epochSeconds("2026-11-21T00:01:00Z") });
    w = await rateWindowOf(get().db, c.accountId);
    assert.equal(w?.day_used, 1);
    assert.equal(w?.day_start.toISOString(), "2026-11-21T00:00:00.000Z");
    assert.equal(w?.month_used, 20000 + 1 + 1 + 10 + 48 + 1);
  });

  test("a Scale pack switches the limits to Startup (300/min, batch 200); past 12 months they switch back", async () => {
    const granted = "2025-12-01T09:00:00Z";
    server.clock.set(granted);
    const c = await createCustomer(get().db, {
      // the Agent pack keeps the account funded after the Scale pack expires
      packs: [{ pack: "Scale", at: new Date(granted) }, { pack: "Agent", at: new Date("2026-11-01T00:00:00Z") }],
      now: new Date(granted),
    });

    server.clock.set("2026-06-15T10:00:10Z");
    const full = await expectStatus(await server.request("/api/v1/batch", batchInit(c.apiKey, unknownList(200))), 200);
    assert.deepEqual(rateHeaders(full), { limit: 300, remaining: 100, reset: epochSeconds("2026-06-15T10:01:00Z") });
    const over = await expectStatus(await server.request("/api/v1/batch", batchInit(c.apiKey, unknownList(201))), 400);
    assertErrorBody(over, "BATCH_SIZE_EXCEEDED");
    await expectStatus(await server.request("/api/v1/batch", batchInit(c.apiKey, unknownList(100, 200))), 200);
    assert.equal((await rateWindowOf(get().db, c.accountId))?.minute_used, 300);
    const limited = await expectStatus(await lookup(server, c.apiKey, UNKNOWN), 429);
    assertErrorBody(limited, "RATE_LIMITED");
    assert.equal(limited.headers.get("Retry-After"), "50", limited.text);

    const usage = await expectStatus(await server.request("/api/v1/usage", { key: c.apiKey }), 200);
    assert.equal(usage.body.data.key.plan, "Startup", usage.text);
    assert.deepEqual(usage.body.data.plan_limits, {
      requests_per_minute: 300,
      requests_per_day: 50000,
      requests_per_month: 500000,
      max_batch_size: 200,
    });

    // one second before expiry the Scale pack still holds
    server.clock.set("2026-12-01T08:59:59Z");
    const last = await expectStatus(await lookup(server, c.apiKey, UNKNOWN), 200);
    assert.equal(rateHeaders(last).limit, 300, last.text);

    server.clock.set("2026-12-01T09:00:00Z");
    const expired = await expectStatus(await lookup(server, c.apiKey, UNKNOWN), 200);
    assert.deepEqual(rateHeaders(expired), { limit: 60, remaining: 59, reset: epochSeconds("2026-12-01T09:01:00Z") });
    const big = await expectStatus(await server.request("/api/v1/batch", batchInit(c.apiKey, unknownList(51))), 400);
    assertErrorBody(big, "BATCH_SIZE_EXCEEDED");
    assert.match(big.body.error, /50/, big.text);
    const back = await expectStatus(await server.request("/api/v1/usage", { key: c.apiKey }), 200);
    assert.equal(back.body.data.key.plan, "Developer", back.text);
    assert.equal(back.body.data.plan_limits.requests_per_minute, 60, back.text);
    assert.equal(back.body.data.plan_limits.max_batch_size, 50, back.text);
  });

  test("weight-0 endpoints (/stats, /usage) carry the headers but consume nothing", async () => {
    server.clock.set("2026-11-20T15:00:00Z");
    const c = await createCustomer(get().db, { packs: [{ pack: "Agent" }], now: server.clock.now() });

    const fresh = await expectStatus(await server.request("/api/v1/stats", { key: c.apiKey }), 200);
    assert.deepEqual(rateHeaders(fresh), { limit: 60, remaining: 60, reset: epochSeconds("2026-11-20T15:01:00Z") });
    assert.equal(await rateWindowOf(get().db, c.accountId), undefined, "a weight-0 call opens no window");

    await expectStatus(await lookup(server, c.apiKey, UNKNOWN), 200);
    for (let i = 0; i < 5; i++) {
      for (const path of ["/api/v1/stats", "/api/v1/usage", "/api/v1/usage?period=day"]) {
        const res = await expectStatus(await server.request(path, { key: c.apiKey }), 200, path);
        assert.deepEqual(rateHeaders(res), { limit: 60, remaining: 59, reset: epochSeconds("2026-11-20T15:01:00Z") }, path);
      }
    }
    const w = await rateWindowOf(get().db, c.accountId);
    assert.equal(w?.minute_used, 1);
    assert.equal(w?.day_used, 1);
    assert.equal(w?.month_used, 1);

    // and they keep answering when the minute is exhausted
    await setRateWindow(get().db, c.accountId, {
      minuteStart: "2026-11-20T15:00:00Z",
      minuteUsed: 60,
      dayStart: "2026-11-20T00:00:00Z",
      dayUsed: 60,
      monthStart: "2026-11-01T00:00:00Z",
      monthUsed: 60,
    });
    await expectStatus(await lookup(server, c.apiKey, UNKNOWN), 429);
    const stats = await expectStatus(await server.request("/api/v1/stats", { key: c.apiKey }), 200);
    assert.equal(rateHeaders(stats).remaining, 0, stats.text);
    const usage = await expectStatus(await server.request("/api/v1/usage", { key: c.apiKey }), 200);
    assert.equal(usage.body.data.rate_limits.minute.remaining, 0, usage.text);
    assert.equal((await rateWindowOf(get().db, c.accountId))?.minute_used, 60);
  });

  test("two server processes on one PostgreSQL database share the windows", async (t) => {
    const url = get().url;
    if (!url) {
      t.skip("PostgreSQL only: an embedded database is open in one process");
      return;
    }
    const clock = createClock("2026-11-20T18:00:10Z");
    const otherDb = await openDatabase({ databaseUrl: url, max: 4 });
    const a = await startServer(get().db, { clock });
    const b = await startServer(otherDb, { clock });
    try {
      const c = await createCustomer(get().db, { packs: [{ pack: "Agent" }], now: clock.now() });
      // 30 calls on each, alternating
      for (let i = 0; i < 60; i++) {
        const s = i % 2 === 0 ? a : b;
        const res = await expectStatus(await lookup(s, c.apiKey, UNKNOWN), 200, `call ${i + 1} on server ${i % 2 === 0 ? "A" : "B"}`);
        assert.equal(rateHeaders(res).remaining, 59 - i, res.text);
      }
      for (const s of [a, b]) {
        const res = await expectStatus(await lookup(s, c.apiKey, UNKNOWN), 429);
        assertErrorBody(res, "RATE_LIMITED");
        assert.equal(res.headers.get("Retry-After"), "50", res.text);
      }
      assert.equal((await rateWindowOf(get().db, c.accountId))?.minute_used, 60);

      // concurrently: 70 calls spread over both servers, exactly 60 get through
      clock.set("2026-11-20T18:01:10Z");
      const d = await createCustomer(get().db, { packs: [{ pack: "Agent" }], now: clock.now() });
      const results = await Promise.all(
        Array.from({ length: 70 }, async (_, i) => {
          const res = await lookup(i % 2 === 0 ? a : b, d.apiKey, UNKNOWN);
          await res.arrayBuffer();
          return res.status;
        }),
      );
      assert.equal(results.filter((s) => s === 200).length, 60, JSON.stringify(results));
      assert.equal(results.filter((s) => s === 429).length, 10, JSON.stringify(results));
      assert.equal((await rateWindowOf(otherDb, d.accountId))?.minute_used, 60);
    } finally {
      await a.close();
      await b.close();
      await otherDb.close();
    }
  });
});
