// GET /stats through a real listening server: the stats resource, read from the counts the stats
// task materialized (a later import shows only after the next run), free on both meters.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { eachDatabase } from "../support/db.ts";
import { createClock, createCustomer, startServer, type TestServer } from "../support/server.ts";
import { runTask, maintenanceDeps } from "../../src/maintenance/run.ts";
import { address, debitsOf, expectStatus, importIndex, rateWindowOf, usageCountsOf } from "../support/http.ts";

const DAY1 = "2026-11-20T09:15:00Z";

const W1 = address(1, "f"); // twitter + farcaster
const W2 = address(2, "f"); // farcaster
const W3 = address(3, "f"); // ens only
const W4 = address(4, "f"); // lens + github
const W5 = address(5, "f"); // checked, empty
const W6 = address(6, "f"); // twitter + ens
const W7 = address(7, "f"); // imported later: farcaster with many followers
const W8 = address(8, "f"); // imported later: empty

const FIRST_IMPORT = [
  { wallet: W1, kind: "twitter", route: "x-signin", handle: "one" },
  { wallet: W1, kind: "farcaster", route: "farcaster-verification", fid: 101, username: "one", followers: 10 },
  { wallet: W2, kind: "farcaster", route: "farcaster-verification", fid: 102, username: "two", followers: 31 },
  { wallet: W3, kind: "ens", route: "ens-primary", name: "three.eth" },
  { wallet: W4, kind: "lens", route: "lens-profile", handle: "four.lens" },
  { wallet: W4, kind: "github", route: "github-signin", username: "four" },
  { wallet: W5, kind: "empty", route: "x-signin" },
  { wallet: W6, kind: "twitter", route: "x-signin", handle: "six" },
  { wallet: W6, kind: "ens", route: "ens-primary", name: "six.eth" },
];

const SECOND_IMPORT = [
  { wallet: W7, kind: "farcaster", route: "farcaster-verification", fid: 107, username: "seven", followers: 1000 },
  { wallet: W8, kind: "empty", route: "x-signin" },
];

const FIRST_COUNTS = {
  total_wallets: 5,
  wallets_checked: 6,
  coverage: { twitter: 2, farcaster: 2, ens: 2, lens: 1, github: 1 },
  // (10 + 31) / 2 = 20.5, reported as a whole number
  farcaster_stats: { avg_followers: 21, max_followers: 31 },
};

const SECOND_COUNTS = {
  total_wallets: 6,
  wallets_checked: 8,
  coverage: { twitter: 2, farcaster: 3, ens: 2, lens: 1, github: 1 },
  // (10 + 31 + 1000) / 3 = 347
  farcaster_stats: { avg_followers: 347, max_followers: 1000 },
};

function counts(data: any) {
  return {
    total_wallets: data.total_wallets,
    wallets_checked: data.wallets_checked,
    coverage: data.coverage,
    farcaster_stats: data.farcaster_stats,
  };
}

eachDatabase("GET /stats", (get) => {
  let server: TestServer;
  let key: string;
  let accountId: string;

  before(async () => {
    server = await startServer(get().db, { clock: createClock(DAY1) });
    await importIndex(get().db, FIRST_IMPORT, new Date(DAY1));
    // no email and no pack: a zero balance
    const c = await createCustomer(get().db, { now: new Date(DAY1) });
    key = c.apiKey;
    accountId = c.accountId;
  });
  after(async () => {
    await server.close();
  });

  test("the stats resource: counts, coverage, farcaster stats, match rates and meta", async () => {
    server.clock.set(DAY1);
    const res = await expectStatus(await server.request("/api/v1/stats", { key }), 200);
    assert.deepEqual(Object.keys(res.body).sort(), ["data", "meta"], res.text);
    const data = res.body.data;
    assert.deepEqual(
      Object.keys(data).sort(),
      ["coverage", "farcaster_stats", "match_rates", "total_wallets", "wallets_checked"],
      res.text,
    );
    assert.deepEqual(counts(data), FIRST_COUNTS, res.text);

    const rates = data.match_rates;
    assert.deepEqual(Object.keys(rates).sort(), ["basis", "by_chain", "measured_on", "overall_either_pct"], res.text);
    assert.match(rates.measured_on, /^\d{4}-\d{2}-\d{2}$/);
    assert.ok(!Number.isNaN(new Date(rates.measured_on).getTime()), rates.measured_on);
    assert.equal(typeof rates.basis, "string");
    assert.ok(rates.basis.length > 0);
    assert.equal(typeof rates.overall_either_pct, "number");
    assert.ok(rates.overall_either_pct >= 0 && rates.overall_either_pct <= 100);
    const chains = Object.entries(rates.by_chain) as Array<[string, any]>;
    assert.ok(chains.length > 0, "at least one chain is measured");
    for (const [chain, entry] of chains) {
      assert.deepEqual(
        Object.keys(entry).sort(),
        ["collections", "either_pct", "farcaster_pct", "holders", "x_pct"],
        `${chain}: ${JSON.stringify(entry)}`,
      );
      for (const value of Object.values(entry)) assert.equal(typeof value, "number", `${chain}: ${JSON.stringify(entry)}`);
      assert.ok(Number.isInteger(entry.collections) && entry.collections > 0, chain);
      assert.ok(Number.isInteger(entry.holders) && entry.holders > 0, chain);
      for (const pct of ["farcaster_pct", "x_pct", "either_pct"]) {
        assert.ok(entry[pct] >= 0 && entry[pct] <= 100, `${chain}.${pct}`);
      }
      // either is at least the larger of the two and at most their sum
      assert.ok(entry.either_pct >= Math.max(entry.farcaster_pct, entry.x_pct), `${chain}: ${JSON.stringify(entry)}`);
      assert.ok(entry.either_pct <= entry.farcaster_pct + entry.x_pct + 1e-9, `${chain}: ${JSON.stringify(entry)}`);
    }

    assert.deepEqual(res.body.meta, { generated_at: "2026-11-20T09:15:00.000Z", as_of: "2026-11-20T09:15:00.000Z" });
  });

  test("an import leaves /stats unchanged, across days, until the next materialization", async () => {
    server.clock.set("2026-11-20T14:00:00Z");
    const counted = await importIndex(get().db, SECOND_IMPORT, server.clock.now());
    assert.equal(counted.wallets_added, 2);

    const sameDay = await expectStatus(await server.request("/api/v1/stats", { key }), 200);
    assert.deepEqual(counts(sameDay.body.data), FIRST_COUNTS, sameDay.text);
    assert.deepEqual(sameDay.body.meta, { generated_at: "2026-11-20T14:00:00.000Z", as_of: "2026-11-20T09:15:00.000Z" });

    // a new UTC day changes nothing by itself: /stats never counts the index
    server.clock.set("2026-11-21T00:00:02Z");
    const nextDay = await expectStatus(await server.request("/api/v1/stats", { key }), 200);
    assert.deepEqual(counts(nextDay.body.data), FIRST_COUNTS, nextDay.text);
    assert.deepEqual(nextDay.body.meta, { generated_at: "2026-11-21T00:00:02.000Z", as_of: "2026-11-20T09:15:00.000Z" });

    // the stats task materializes the counts
    server.clock.set("2026-11-21T03:00:00Z");
    const logs: string[] = [];
    const report = await runTask(maintenanceDeps(server.config, { db: get().db, now: server.clock.now, log: (l) => logs.push(l) }), "stats");
    assert.deepEqual(report, { task: "stats", status: "done", as_of: "2026-11-21T03:00:00.000Z", total_wallets: 6, wallets_checked: 8 });

    server.clock.set("2026-11-21T03:00:05Z");
    const after = await expectStatus(await server.request("/api/v1/stats", { key }), 200);
    assert.deepEqual(counts(after.body.data), SECOND_COUNTS, after.text);
    assert.deepEqual(after.body.meta, { generated_at: "2026-11-21T03:00:05.000Z", as_of: "2026-11-21T03:00:00.000Z" });
    assert.deepEqual(after.body.data.match_rates, sameDay.body.data.match_rates, "match rates are a dated constant");

    server.clock.set("2026-11-21T18:30:00Z");
    const again = await expectStatus(await server.request("/api/v1/stats", { key }), 200);
    assert.deepEqual(counts(again.body.data), SECOND_COUNTS, again.text);
    assert.equal(again.body.meta.as_of, "2026-11-21T03:00:00.000Z");
  });

  test("free on both meters and answers at zero balance", async () => {
    server.clock.set("2026-11-22T10:00:00Z");
    // the same key is refused on a metered endpoint
    const lookup = await expectStatus(await server.request(`/api/v1/wallet/${W1}`, { key }), 402);
    assert.equal(lookup.body.code, "NO_CREDITS", lookup.text);

    for (let i = 0; i < 3; i++) {
      const res = await expectStatus(await server.request("/api/v1/stats", { key }), 200, `call ${i + 1}`);
      assert.equal(res.headers.get("X-RateLimit-Remaining"), "60", res.text);
    }
    assert.deepEqual(await debitsOf(get().db, accountId), []);
    const w = await rateWindowOf(get().db, accountId);
    assert.deepEqual([w?.minute_used ?? 0, w?.day_used ?? 0, w?.month_used ?? 0], [0, 0, 0], "stats weigh nothing");

    // GET /usage flushes the usage events: every stats call spent 0 units and 0 matches
    const usage = await expectStatus(await server.request("/api/v1/usage", { key }), 200);
    assert.equal(usage.body.data.credits.available, 0, usage.text);
    const stats = (await usageCountsOf(get().db, accountId)).filter((e) => e.route === "/v1/stats");
    assert.equal(stats.reduce((n, e) => n + e.requests, 0), 1 + 4 + 3, "every /stats call of this suite is recorded");
    for (const e of stats) {
      assert.equal(e.status, 200);
      assert.equal(e.units, 0);
      assert.equal(e.matches, 0);
    }
    assert.equal(usage.body.data.usage.total_credits, 0, usage.text);
  });

  test("needs a valid key", async () => {
    const res = await expectStatus(await server.request("/api/v1/stats"), 401);
    assert.equal(res.body.code, "UNAUTHORIZED", res.text);
  });
});
