// The daily reachability re-check against a local fake of the X API (a real HTTP server):
// what each answer records, the correction a wallet sees on its next lookup, the daily bound
// and order, rate limits, failing upstreams, and the lease that keeps two runs apart.
import assert from "node:assert/strict";
import { after, before, beforeEach, test } from "node:test";
import { eachDatabase } from "../support/db.ts";
import { FAKE_X_TOKEN, startFakeX, type FakeX } from "../support/fake-x.ts";
import { createClock, createCustomer, json, startServer, type Clock } from "../support/server.ts";
import { address, importIndex } from "../support/http.ts";
import { openDatabase } from "../../src/db/open.ts";
import type { Db } from "../../src/db/types.ts";
import { readConfig } from "../../src/config.ts";
import { acquireLease } from "../../src/maintenance/lease.ts";
import { LEASE_MS, maintenanceDeps, runTask, runTasks, type MaintenanceDeps } from "../../src/maintenance/run.ts";

const T0 = "2026-11-20T03:00:00Z";

interface Harness {
  deps: MaintenanceDeps;
  sleeps: number[];
  logs: string[];
}

function harness(db: Db, clock: Clock, x: FakeX | undefined, options: { limit?: number; token?: string; url?: string } = {}): Harness {
  const sleeps: number[] = [];
  const logs: string[] = [];
  const deps: MaintenanceDeps = {
    db,
    now: clock.now,
    log: (line) => logs.push(line),
    x: x ? { baseUrl: options.url ?? x.url, bearerToken: options.token ?? FAKE_X_TOKEN } : undefined,
    reachabilityDailyLimit: options.limit ?? 10_000,
    // the waits pass on the injected clock, never in real time
    sleep: async (ms) => {
      sleeps.push(ms);
      clock.advance(ms);
    },
  };
  return { deps, sleeps, logs };
}

async function reset(db: Db): Promise<void> {
  for (const statement of [
    "DELETE FROM links",
    "DELETE FROM wallets",
    "DELETE FROM twitter_reachability",
    "DELETE FROM reachability_check_days",
    "UPDATE maintenance_runs SET holder = NULL, lease_until = NULL, started_at = NULL, last_success_at = NULL, last_result = NULL",
  ]) {
    await db.query(statement);
  }
}

/** One wallet per handle, signed in (attested). */
async function importHandles(db: Db, handles: string[], at: Date, tag = "7"): Promise<void> {
  await importIndex(
    db,
    handles.map((handle, i) => ({ wallet: address(i + 1, tag), kind: "twitter", route: "x-signin", handle, observed_at: at.toISOString() })),
    at,
  );
}

async function reachabilityRows(db: Db): Promise<Array<{ handle: string; reachability: string; checked_at: string }>> {
  const rows = await db.query<{ handle: string; reachability: string; checked_at: Date }>(
    "SELECT handle, reachability, checked_at FROM twitter_reachability ORDER BY handle",
  );
  return rows.map((r) => ({ handle: r.handle, reachability: r.reachability, checked_at: r.checked_at.toISOString() }));
}

async function taskRow(db: Db, task: string) {
  const [row] = await db.query<{ holder: string | null; last_success_at: Date | null; last_result: unknown }>(
    "SELECT holder, last_success_at, last_result FROM maintenance_runs WHERE task = $1",
    [task],
  );
  return row;
}

const pad = (i: number) => `h${String(i).padStart(3, "0")}`;

eachDatabase("reachability re-check", (get) => {
  let x: FakeX;
  let clock: Clock;

  before(async () => {
    x = await startFakeX();
  });
  after(() => x.close());
  beforeEach(async () => {
    await reset(get().db);
    x.clear();
    clock = createClock(T0);
  });

  test("live, suspended and not found are recorded with the time checked; an uninformative answer changes nothing", async () => {
    const { db } = get();
    await importHandles(db, ["alice", "bob", "carol", "dan"], new Date("2026-11-01T00:00:00Z"));
    x.live("Alice"); // X answers with the account's own capitalisation
    x.suspend("bob");
    x.remove("carol");
    x.unauthorized("dan");

    const { deps, sleeps } = harness(db, clock, x);
    const report = await runTask(deps, "reachability");
    assert.deepEqual(report, {
      task: "reachability",
      status: "done",
      checked: 4,
      live: 1,
      suspended: 1,
      deactivated: 1,
      unresolved: 1,
      checked_today: 4,
      daily_limit: 10_000,
    });
    assert.deepEqual(x.calls, [["alice", "bob", "carol", "dan"]]);
    assert.deepEqual(sleeps, []);
    const at = new Date(T0).toISOString();
    assert.deepEqual(await reachabilityRows(db), [
      { handle: "alice", reachability: "live", checked_at: at },
      { handle: "bob", reachability: "suspended", checked_at: at },
      { handle: "carol", reachability: "deactivated", checked_at: at },
    ]);
    const row = await taskRow(db, "reachability");
    assert.equal(row.holder, null, "the lease is released");
    assert.equal(row.last_success_at?.toISOString(), at);
    assert.deepEqual(row.last_result, report, "the run's report is kept with the task");
  });

  test("a wallet whose handle stops reaching anyone shows the working attested handle on the next lookup", async () => {
    const { db } = get();
    const wallet = address(1, "c");
    const other = address(2, "c");
    const observed = "2026-11-10T00:00:00Z";
    await importIndex(
      db,
      [
        { wallet, kind: "twitter", route: "x-signin", handle: "dave_old", observed_at: observed },
        { wallet, kind: "twitter", route: "manual-review", handle: "dave_new", observed_at: "2026-11-05T00:00:00Z" },
        { wallet: other, kind: "twitter", route: "x-signin", handle: "erin_gone", observed_at: observed },
        { wallet: other, kind: "twitter", route: "farcaster-x-verified", handle: "erin_here", observed_at: "2026-11-05T00:00:00Z" },
        ...["dave_old", "dave_new", "erin_gone", "erin_here"].map((handle) => ({
          kind: "reachability",
          handle,
          reachability: "live",
          checked_at: "2026-11-18T00:00:00Z",
        })),
      ],
      clock.now(),
    );
    const { apiKey } = await createCustomer(db, { packs: [{ pack: "Agent", quantity: 2 }], now: clock.now() });
    const server = await startServer(db, { clock });
    const twitterOf = async (w: string) => {
      const res = await server.request(`/api/v1/wallet/${w}`, { key: apiKey });
      const body = await json(res);
      assert.equal(res.status, 200, JSON.stringify(body));
      return body.data.twitter;
    };
    try {
      assert.deepEqual(await twitterOf(wallet), {
        handle: "dave_old",
        url: "https://x.com/dave_old",
        verified: true,
        reachable: true,
        reachability: "live",
        reachability_checked_at: "2026-11-18T00:00:00.000Z",
        also: { handle: "dave_new", url: "https://x.com/dave_new", source: "manual" },
      });

      x.suspend("dave_old");
      x.remove("erin_gone");
      x.live("dave_new", "erin_here");
      const report = await runTask(harness(db, clock, x).deps, "reachability");
      assert.equal(report.status, "done", JSON.stringify(report));

      const checkedAt = new Date(T0).toISOString();
      assert.deepEqual(await twitterOf(wallet), {
        handle: "dave_new",
        url: "https://x.com/dave_new",
        verified: true,
        reachable: true,
        reachability: "live",
        reachability_checked_at: checkedAt,
      });
      assert.deepEqual(await twitterOf(other), {
        handle: "erin_here",
        url: "https://x.com/erin_here",
        verified: true,
        reachable: true,
        reachability: "live",
        reachability_checked_at: checkedAt,
      });

      // and back: once the first handle reaches someone again, both show
      x.live("dave_old");
      clock.advance(86_400_000);
      await runTask(harness(db, clock, x).deps, "reachability");
      const restored = await twitterOf(wallet);
      assert.equal(restored.handle, "dave_old", JSON.stringify(restored));
      assert.deepEqual(restored.also, { handle: "dave_new", url: "https://x.com/dave_new", source: "manual" });
    } finally {
      await server.close();
    }
  });

  test("a bounded number a day: never checked first, then the oldest check; the bound holds across runs", async () => {
    const { db } = get();
    const handles = Array.from({ length: 150 }, (_, i) => pad(i));
    await importHandles(db, handles, new Date("2026-10-01T00:00:00Z"));
    // h000-h019 never checked; h020-h029 imported as unchecked; h030-h149 checked, h149 longest ago
    await importIndex(
      db,
      handles.slice(20).map((handle, j) => {
        const i = j + 20;
        return {
          kind: "reachability",
          handle,
          reachability: i < 30 ? "unchecked" : "live",
          checked_at: new Date(new Date(T0).getTime() - i * 3_600_000).toISOString(),
        };
      }),
      new Date(T0),
    );
    x.live(...handles);

    const first = await runTask(harness(db, clock, x, { limit: 120 }).deps, "reachability");
    assert.equal(first.status, "done", JSON.stringify(first));
    assert.equal("checked" in first && first.checked, 120);
    const expected = [
      ...handles.slice(0, 20),
      // imported as unchecked: still never checked, the oldest entry first
      ...handles.slice(20, 30).reverse(),
      ...handles.slice(30).reverse().slice(0, 90),
    ];
    assert.deepEqual(x.calls.map((c) => c.length), [100, 20]);
    assert.deepEqual(x.calls.flat(), expected);

    // later the same day: the bound is spent
    clock.advance(3_600_000);
    const again = await runTask(harness(db, clock, x, { limit: 120 }).deps, "reachability");
    assert.deepEqual(again, { task: "reachability", status: "done", checked: 0, live: 0, suspended: 0, deactivated: 0, unresolved: 0, checked_today: 120, daily_limit: 120 });
    assert.equal(x.calls.length, 2, "no call once the bound is spent");

    // a higher bound the same day goes on with the handles not yet checked today
    const raised = await runTask(harness(db, clock, x, { limit: 140 }).deps, "reachability");
    assert.equal("checked_today" in raised && raised.checked_today, 140);
    assert.deepEqual(x.calls[2], handles.slice(30).reverse().slice(90, 110));

    // the next day: the oldest checks first (h059 ... h030), then yesterday's
    clock.set("2026-11-21T03:00:00Z");
    x.calls.length = 0;
    const next = await runTask(harness(db, clock, x, { limit: 120 }).deps, "reachability");
    assert.equal("checked_today" in next && next.checked_today, 120);
    assert.deepEqual(x.calls.flat().slice(0, 10), handles.slice(30, 40).reverse());
    const counted = await db.query<{ day: string; checked: number }>("SELECT to_char(day, 'YYYY-MM-DD') AS day, checked FROM reachability_check_days ORDER BY day");
    assert.deepEqual(counted, [{ day: "2026-11-20", checked: 140 }, { day: "2026-11-21", checked: 120 }]);
  });

  test("an interrupted run keeps what it did, and the next run goes on from there", async () => {
    const { db } = get();
    const handles = Array.from({ length: 150 }, (_, i) => pad(i));
    await importHandles(db, handles, new Date("2026-10-01T00:00:00Z"));
    x.live(...handles);
    x.script({ kind: "ok" }, { kind: "status", status: 503 }, { kind: "status", status: 502 }, { kind: "status", status: 503 });

    const h = harness(db, clock, x);
    const failed = await runTask(h.deps, "reachability");
    assert.deepEqual(failed, {
      task: "reachability",
      status: "failed",
      checked: 100,
      live: 100,
      suspended: 0,
      deactivated: 0,
      unresolved: 0,
      checked_today: 100,
      daily_limit: 10_000,
      reason: "X API answered 503",
    });
    assert.deepEqual(h.sleeps, [2_000, 8_000], "two retries, backing off");
    assert.equal((await reachabilityRows(db)).length, 100);
    const row = await taskRow(db, "reachability");
    assert.equal(row.holder, null);
    assert.equal(row.last_success_at, null, "a failed run does not count as the day's run");

    x.calls.length = 0;
    const resumed = await runTask(harness(db, clock, x).deps, "reachability");
    assert.equal(resumed.status, "done", JSON.stringify(resumed));
    assert.deepEqual(x.calls, [handles.slice(100)]);
    assert.equal("checked_today" in resumed && resumed.checked_today, 150);
    assert.equal((await reachabilityRows(db)).length, 150);
  });

  test("a 429 waits until x-rate-limit-reset and retries; a spent window waits before the next call", async () => {
    const { db } = get();
    const handles = Array.from({ length: 150 }, (_, i) => pad(i));
    await importHandles(db, handles, new Date("2026-10-01T00:00:00Z"));
    x.live(...handles);
    x.script({ kind: "rate-limited", resetAt: new Date(new Date(T0).getTime() + 30_000) });
    // the call after the 429 spends the window, which resets 90 s later
    x.window(0, new Date(new Date(T0).getTime() + 120_000));

    const h = harness(db, clock, x);
    const report = await runTask(h.deps, "reachability");
    assert.equal(report.status, "done", JSON.stringify(report));
    assert.equal("checked" in report && report.checked, 150);
    // 30 s to the reset plus a second; then from T0+31 s to the window's reset at T0+120 s, plus a second
    assert.deepEqual(h.sleeps, [31_000, 90_000]);
    assert.deepEqual(x.calls.map((c) => c.length), [100, 100, 50]);
    assert.deepEqual(x.calls[0], x.calls[1], "the rate-limited call is made again");
  });

  test("a rate limit that resets too far off stops the run without marking it done", async () => {
    const { db } = get();
    await importHandles(db, ["alice"], new Date("2026-10-01T00:00:00Z"));
    x.live("alice");
    const resetAt = new Date(new Date(T0).getTime() + 3_600_000);
    x.script({ kind: "rate-limited", resetAt });

    const h = harness(db, clock, x);
    const report = await runTask(h.deps, "reachability");
    assert.equal(report.status, "partial", JSON.stringify(report));
    assert.equal("reason" in report && report.reason, `X API rate limit resets at ${resetAt.toISOString()}, too far off to wait`);
    assert.deepEqual(h.sleeps, []);
    assert.deepEqual(await reachabilityRows(db), []);
    const row = await taskRow(db, "reachability");
    assert.equal(row.holder, null);
    assert.equal(row.last_success_at, null);
  });

  test("a failing upstream changes nothing: 5xx, a refused token, nothing listening", async () => {
    const { db } = get();
    await importHandles(db, ["alice"], new Date("2026-10-01T00:00:00Z"));
    await importIndex(db, [{ kind: "reachability", handle: "alice", reachability: "live", checked_at: "2026-11-01T00:00:00Z" }], clock.now());
    const before = await reachabilityRows(db);
    x.suspend("alice");

    x.script({ kind: "status", status: 500 }, { kind: "status", status: 500 }, { kind: "status", status: 500 });
    const h = harness(db, clock, x);
    const down = await runTask(h.deps, "reachability");
    assert.equal(down.status, "failed");
    assert.equal("reason" in down && down.reason, "X API answered 500");
    assert.deepEqual(h.sleeps, [2_000, 8_000]);

    const badToken = harness(db, clock, x, { token: "wrong" });
    const refused = await runTask(badToken.deps, "reachability");
    assert.equal("reason" in refused && refused.reason, "X API answered 401");
    assert.deepEqual(badToken.sleeps, [], "a refused token is not retried");

    const closed = await startFakeX();
    await closed.close();
    const nowhere = harness(db, clock, x, { url: closed.url });
    const unreachable = await runTask(nowhere.deps, "reachability");
    assert.equal("reason" in unreachable && unreachable.reason, "X API could not be reached");

    assert.deepEqual(await reachabilityRows(db), before);
    assert.deepEqual(await db.query("SELECT * FROM reachability_check_days"), []);
    assert.equal((await taskRow(db, "reachability")).last_success_at, null);
  });

  test("two runs at once: one does the work, the other reports it skipped", async () => {
    const { db, url } = get();
    await importHandles(db, ["alice", "bob"], new Date("2026-10-01T00:00:00Z"));
    x.live("alice", "bob");
    let release!: () => void;
    let arrived!: () => void;
    const inFlight = new Promise<void>((resolve) => (arrived = resolve));
    x.script({ kind: "hold", release: new Promise<void>((resolve) => (release = resolve)), arrived: () => arrived() });

    // on PostgreSQL the second run comes from another pool, as a second instance would
    const second = url ? await openDatabase({ databaseUrl: url, max: 2 }) : db;
    try {
      const first = runTask(harness(db, clock, x).deps, "reachability");
      await inFlight;
      const skipped = await runTask(harness(second, clock, x).deps, "reachability");
      assert.deepEqual(skipped, { task: "reachability", status: "skipped", reason: `another run has held it since ${new Date(T0).toISOString()}` });
      release();
      const done = await first;
      assert.equal(done.status, "done", JSON.stringify(done));
      assert.equal("checked" in done && done.checked, 2);
      assert.equal(x.calls.length, 1, "the skipped run made no call");

      // both at once through runTasks, the stats task too: each task is done exactly once
      const both = await Promise.all([runTasks(harness(db, clock, x).deps, ["stats"]), runTasks(harness(second, clock, x).deps, ["stats"])]);
      assert.deepEqual(both.flat().map((r) => r.status).sort(), ["done", "skipped"]);
    } finally {
      if (second !== db) await second.close();
    }
  });

  test("a run that died holding the lease frees the task when the lease expires", async () => {
    const { db } = get();
    await importHandles(db, ["alice"], new Date("2026-10-01T00:00:00Z"));
    x.live("alice");
    const dead = await acquireLease(db, "reachability", { now: clock.now(), until: new Date(clock.now().getTime() + LEASE_MS) });
    assert.ok(dead);

    clock.advance(LEASE_MS - 1_000);
    assert.equal((await runTask(harness(db, clock, x).deps, "reachability")).status, "skipped");
    assert.equal(x.calls.length, 0);

    clock.advance(2_000);
    const taken = await runTask(harness(db, clock, x).deps, "reachability");
    assert.equal(taken.status, "done", JSON.stringify(taken));
    // the dead run's late release touches nothing
    await dead.release(false, { late: true });
    const row = await taskRow(db, "reachability");
    assert.equal(row.last_success_at?.toISOString(), clock.now().toISOString());
    assert.equal(row.holder, null);
    assert.equal(await dead.renew(new Date(clock.now().getTime() + LEASE_MS)), false, "a lost lease cannot be renewed");
  });

  test("without X_API_URL and X_BEARER_TOKEN the re-check is off and says so; stats still run", async () => {
    const { db } = get();
    await importHandles(db, ["alice"], new Date("2026-10-01T00:00:00Z"));
    const logs: string[] = [];
    const deps = maintenanceDeps(readConfig({}), { db, now: clock.now, log: (line) => logs.push(line) });
    const reports = await runTasks(deps);
    assert.deepEqual(reports[0], { task: "reachability", status: "off", reason: "X_API_URL and X_BEARER_TOKEN are not set" });
    assert.equal(reports[1].status, "done");
    assert.ok(logs.includes("Maintenance: the reachability re-check is off (X_API_URL and X_BEARER_TOKEN are not set)"), logs.join("\n"));
    assert.deepEqual(await reachabilityRows(db), []);
    assert.equal(x.calls.length, 0);
  });
});
