// GET /usage through a real listening server: every field of the usage resource after known
// calls on the injected clock, the period filters, and its errors.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { eachDatabase } from "../support/db.ts";
import { createClock, createCustomer, startServer, type TestServer } from "../support/server.ts";
import {
  address,
  assertErrorBody,
  batchInit,
  debitedTotal,
  expectStatus,
  importIndex,
  rateWindowOf,
  usageCountsOf,
} from "../support/http.ts";

const BILL = address(1, "b");
const BILL2 = address(2, "b");
const UNKNOWN = address(1, "c");
const UNKNOWN2 = address(2, "c");

const WALLET_ROUTE = "/v1/wallet/{address}";
const BATCH_ROUTE = "/v1/batch";
const USAGE_ROUTE = "/v1/usage";

eachDatabase("GET /usage", (get) => {
  let server: TestServer;

  before(async () => {
    server = await startServer(get().db, { clock: createClock("2026-10-01T08:00:00Z") });
    await importIndex(
      get().db,
      [
        { wallet: BILL, kind: "twitter", route: "x-signin", handle: "billy" },
        { wallet: BILL2, kind: "farcaster", route: "farcaster-verification", fid: 7, username: "billy2", followers: 3 },
      ],
      new Date("2026-09-01T00:00:00Z"),
    );
  });
  after(async () => {
    await server.close();
  });

  function usage(key: string, query = "") {
    return server.request(`/api/v1/usage${query}`, { key });
  }

  test("every field after calls spread over several days", async () => {
    const created = "2026-10-01T08:00:00Z";
    server.clock.set(created);
    const c = await createCustomer(get().db, { packs: [{ pack: "Agent" }], now: new Date(created) });
    const key = c.apiKey;
    const lookup = (wallet: string) => server.request(`/api/v1/wallet/${wallet}`, { key });

    // more than 30 days before the final read: outside every period
    server.clock.set("2026-10-15T12:00:00Z");
    await expectStatus(await lookup(UNKNOWN), 200);
    // inside the month, outside the week
    server.clock.set("2026-11-10T12:00:30Z");
    await expectStatus(await lookup(BILL), 200);
    // day one: four calls, one of them a 400
    server.clock.set("2026-11-20T12:00:30Z");
    await expectStatus(await lookup(BILL), 200);
    await expectStatus(await lookup(UNKNOWN2), 200);
    await expectStatus(await lookup("0xBAD"), 400);
    const batch1 = await expectStatus(
      await server.request("/api/v1/batch", batchInit(key, [BILL, BILL2, BILL.toUpperCase().replace("0X", "0x")])),
      200,
    );
    assert.equal(batch1.body.meta.matched, 2, batch1.text);
    // a request without a key belongs to nobody
    await expectStatus(await server.request(`/api/v1/wallet/${BILL}`), 401);
    // day two, more than a day later
    server.clock.set("2026-11-21T13:00:30Z");
    await expectStatus(await lookup(BILL2), 200);
    await expectStatus(await server.request("/api/v1/batch", batchInit(key, [BILL, UNKNOWN])), 200);

    const res = await expectStatus(await usage(key), 200);
    assert.ok(!res.text.includes(key), "the key itself never appears, only its prefix");
    const data = res.body.data;
    assert.deepEqual(Object.keys(res.body).sort(), ["data", "meta"], res.text);
    assert.deepEqual(res.body.meta, { generated_at: "2026-11-21T13:00:30.000Z" });

    assert.deepEqual(data.key, {
      id: c.keyId,
      name: "test",
      prefix: key.slice(0, 12),
      plan: "Developer",
      created_at: "2026-10-01T08:00:00.000Z",
      last_used_at: "2026-11-21T13:00:30.000Z",
    }, res.text);
    assert.match(data.key.prefix, /^wid_live_[A-Za-z0-9]{3}$/);

    assert.deepEqual(data.plan_limits, {
      requests_per_minute: 60,
      requests_per_day: 5000,
      requests_per_month: 50000,
      max_batch_size: 50,
    });

    // minute: 1 + 2 this minute; day: the same 3; month (November): 1 + 5 + 3
    assert.deepEqual(data.rate_limits, {
      minute: { limit: 60, remaining: 57, reset_at: "2026-11-21T13:01:00.000Z" },
      day: { limit: 5000, remaining: 4997, reset_at: "2026-11-22T00:00:00.000Z" },
      month: { limit: 50000, remaining: 49991, reset_at: "2026-12-01T00:00:00.000Z" },
    }, res.text);
    const w = await rateWindowOf(get().db, c.accountId);
    assert.deepEqual([w?.minute_used, w?.day_used, w?.month_used], [3, 3, 9]);

    // billed: 1 (11-10) + 1 + 2 (11-20) + 1 + 1 (11-21)
    assert.equal(await debitedTotal(get().db, c.accountId), 6);
    assert.deepEqual(data.credits, {
      available: 6,
      unmetered: false,
      on_free_allowance: false,
      free_window_resets_at: null,
    });

    const counts = await usageCountsOf(get().db, c.accountId);
    assert.deepEqual(
      counts.map((e) => [e.minute.toISOString(), e.route, e.status, e.requests, e.units, e.wallets]),
      [
        ["2026-10-15T12:00:00.000Z", WALLET_ROUTE, 200, 1, 1, 1],
        ["2026-11-10T12:00:00.000Z", WALLET_ROUTE, 200, 1, 1, 1],
        ["2026-11-20T12:00:00.000Z", BATCH_ROUTE, 200, 1, 3, 3],
        ["2026-11-20T12:00:00.000Z", WALLET_ROUTE, 200, 2, 2, 2],
        ["2026-11-20T12:00:00.000Z", WALLET_ROUTE, 400, 1, 0, 0],
        ["2026-11-21T13:00:00.000Z", BATCH_ROUTE, 200, 1, 2, 2],
        ["2026-11-21T13:00:00.000Z", WALLET_ROUTE, 200, 1, 1, 1],
      ],
      "GET /usage flushed every earlier call, counted per minute under its route template and status",
    );

    const u = data.usage;
    assert.equal(u.period, "month");
    assert.equal(u.total_requests, 7, res.text);
    assert.equal(u.total_credits, 9, "rate-limit units, not match credits");
    assert.equal(u.total_wallets, 9);
    assert.equal(u.error_rate, 14.29, "1 of 7 failed, as a percentage");
    const inPeriod = counts.slice(1);
    const latencySum = inPeriod.reduce((n, e) => n + e.latency_ms_sum, 0);
    assert.equal(typeof u.avg_latency_ms, "number");
    assert.ok(
      Math.abs(u.avg_latency_ms - latencySum / 7) <= 0.01,
      `avg_latency_ms ${u.avg_latency_ms} is the period's latency sum over its 7 requests (${latencySum})`,
    );
    assert.equal(Math.round(u.avg_latency_ms * 100) / 100, u.avg_latency_ms, "two decimals at most");
    assert.deepEqual(u.requests_by_endpoint, { [BATCH_ROUTE]: 2, [WALLET_ROUTE]: 5 }, res.text);
    assert.deepEqual(u.requests_by_day, [
      { date: "2026-11-10", count: 1, credits: 1 },
      { date: "2026-11-20", count: 4, credits: 5 },
      { date: "2026-11-21", count: 2, credits: 3 },
    ]);

    // the week: day one and day two, plus the GET /usage just made
    const week = await expectStatus(await usage(key, "?period=week"), 200);
    const wu = week.body.data.usage;
    assert.equal(wu.period, "week");
    assert.equal(wu.total_requests, 7, week.text);
    assert.equal(wu.total_credits, 8);
    assert.equal(wu.total_wallets, 8);
    assert.equal(wu.error_rate, 14.29);
    assert.deepEqual(wu.requests_by_endpoint, { [BATCH_ROUTE]: 2, [USAGE_ROUTE]: 1, [WALLET_ROUTE]: 4 }, week.text);
    assert.deepEqual(wu.requests_by_day, [
      { date: "2026-11-20", count: 4, credits: 5 },
      { date: "2026-11-21", count: 3, credits: 3 },
    ]);

    // the last 24 hours: day two only (day one's calls are 25 hours old)
    const day = await expectStatus(await usage(key, "?period=day"), 200);
    const du = day.body.data.usage;
    assert.equal(du.period, "day");
    assert.equal(du.total_requests, 4, day.text);
    assert.equal(du.total_credits, 3);
    assert.equal(du.total_wallets, 3);
    assert.equal(du.error_rate, 0);
    assert.deepEqual(du.requests_by_endpoint, { [BATCH_ROUTE]: 1, [USAGE_ROUTE]: 2, [WALLET_ROUTE]: 1 }, day.text);
    assert.deepEqual(du.requests_by_day, [{ date: "2026-11-21", count: 4, credits: 3 }]);

    const month = await expectStatus(await usage(key, "?period=month"), 200);
    assert.equal(month.body.data.usage.period, "month");
    assert.equal(month.body.data.usage.total_requests, 10, month.text);
    assert.equal(month.body.data.usage.total_credits, 9, "reading usage costs no units");
    assert.deepEqual([(await rateWindowOf(get().db, c.accountId))?.minute_used], [3]);
  });

  test("a window not exercised yet is null; each resets on its own schedule", async () => {
    server.clock.set("2026-11-20T12:00:30Z");
    const c = await createCustomer(get().db, { packs: [{ pack: "Agent" }], now: server.clock.now() });

    const fresh = await expectStatus(await usage(c.apiKey), 200);
    assert.deepEqual(fresh.body.data.rate_limits, { minute: null, day: null, month: null }, fresh.text);
    const empty = fresh.body.data.usage;
    assert.deepEqual(
      {
        total_requests: empty.total_requests,
        total_credits: empty.total_credits,
        total_wallets: empty.total_wallets,
        avg_latency_ms: empty.avg_latency_ms,
        error_rate: empty.error_rate,
        requests_by_endpoint: empty.requests_by_endpoint,
        requests_by_day: empty.requests_by_day,
      },
      { total_requests: 0, total_credits: 0, total_wallets: 0, avg_latency_ms: 0, error_rate: 0, requests_by_endpoint: {}, requests_by_day: [] },
    );
    assert.equal(fresh.body.data.key.last_used_at, "2026-11-20T12:00:30.000Z");

    await expectStatus(await server.request(`/api/v1/wallet/${UNKNOWN}`, { key: c.apiKey }), 200);
    const used = await expectStatus(await usage(c.apiKey), 200);
    assert.deepEqual(used.body.data.rate_limits, {
      minute: { limit: 60, remaining: 59, reset_at: "2026-11-20T12:01:00.000Z" },
      day: { limit: 5000, remaining: 4999, reset_at: "2026-11-21T00:00:00.000Z" },
      month: { limit: 50000, remaining: 49999, reset_at: "2026-12-01T00:00:00.000Z" },
    }, used.text);

    server.clock.set("2026-11-20T12:01:05Z");
    const nextMinute = await expectStatus(await usage(c.apiKey), 200);
    assert.deepEqual(nextMinute.body.data.rate_limits, {
      minute: null,
      day: { limit: 5000, remaining: 4999, reset_at: "2026-11-21T00:00:00.000Z" },
      month: { limit: 50000, remaining: 49999, reset_at: "2026-12-01T00:00:00.000Z" },
    }, nextMinute.text);

    server.clock.set("2026-11-21T00:00:05Z");
    const nextDay = await expectStatus(await usage(c.apiKey), 200);
    assert.deepEqual(nextDay.body.data.rate_limits, {
      minute: null,
      day: null,
      month: { limit: 50000, remaining: 49999, reset_at: "2026-12-01T00:00:00.000Z" },
    }, nextDay.text);

    server.clock.set("2026-12-01T00:00:00Z");
    const nextMonth = await expectStatus(await usage(c.apiKey), 200);
    assert.deepEqual(nextMonth.body.data.rate_limits, { minute: null, day: null, month: null }, nextMonth.text);
    const w = await rateWindowOf(get().db, c.accountId);
    assert.deepEqual([w?.minute_used, w?.day_used, w?.month_used], [1, 1, 1], "reading usage never counted");
  });

  test("an unknown period is 400 INVALID_PARAMETER; no key is 401", async () => {
    server.clock.set("2026-11-20T12:00:30Z");
    const c = await createCustomer(get().db, { packs: [{ pack: "Agent" }], now: server.clock.now() });
    for (const period of ["year", "", "MONTH", "toString", "constructor", "__proto__"]) {
      const res = await expectStatus(await usage(c.apiKey, `?period=${encodeURIComponent(period)}`), 400, `period=${period}`);
      assertErrorBody(res, "INVALID_PARAMETER");
    }
    const noKey = await expectStatus(await server.request("/api/v1/usage"), 401);
    assertErrorBody(noKey, "UNAUTHORIZED");
    const badKey = await expectStatus(await usage(`wid_live_${"0".repeat(32)}`), 401);
    assertErrorBody(badKey, "UNAUTHORIZED");
  });
});
