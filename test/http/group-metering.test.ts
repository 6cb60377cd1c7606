// Longer than 450 lines on purpose: each outcome of group metering is its own test over one shared set of accounts and index rows.
// Group-committed metering: the calls of a process in flight together are metered by one
// statement (meter_calls). The group's answers are the answers each call would get alone: windows
// exact across two processes, one debit row per account per group, refusals inside a group
// exact and free, and nothing answered before its commit or billed twice when the answer is lost.
import { before, test } from "node:test";
import assert from "node:assert/strict";
import { eachDatabase } from "../support/db.ts";
import type { Db } from "../../src/db/types.ts";
import { ApiError } from "../../src/http/errors.ts";
import { meterKey, type Metered, type MeterDeps, type MeterOptions } from "../../src/http/meter.ts";
import { METER_LANES } from "../../src/http/meter-group.ts";
import { useTurnEnd } from "../../src/http/turn.ts";
import { sha256Hex } from "../../src/ledger/keys.ts";
import { readCredits } from "../../src/ledger/accounts.ts";
import { createClock, createCustomer, serverPair } from "../support/server.ts";
import { address, debitedTotal, debitsOf, importIndex, rateWindowOf, setRateWindow } from "../support/http.ts";

/** Wallets with a twitter link: each one a call bills one match. */
const billable = (i: number) => address(i, "c1");
const WALLET_ROUTE = "/v1/wallet/{address}";

/** What GET /wallet/{address} asks of the meter. */
const lookup = (wallet: string): MeterOptions => ({
  route: WALLET_ROUTE,
  weight: 1,
  needsCredits: true,
  billWallets: [wallet],
  lookup: [wallet],
  wallets: 1,
});

eachDatabase("group-committed metering", (get) => {
  const clock = createClock("2026-11-20T12:00:30Z");
  let deps: MeterDeps;
  let primer: string;

  before(async () => {
    const { db } = get();
    const observed_at = new Date(clock.now().getTime() - 86_400_000).toISOString();
    await importIndex(
      db,
      Array.from({ length: 400 }, (_, i) => ({ wallet: billable(i), kind: "twitter", route: "x-signin", handle: `grouped${i}`, observed_at })),
      clock.now(),
    );
    deps = { db, now: clock.now, publicUrl: "http://localhost" };
    primer = await sha256Hex((await createCustomer(db, { now: clock.now() })).apiKey);
  });

  async function customer(packs: number) {
    const c = await createCustomer(get().db, { packs: packs > 0 ? [{ pack: "Agent", quantity: packs }] : [], now: clock.now() });
    return { ...c, digest: await sha256Hex(c.apiKey) };
  }

  /**
   * Meters `calls` as one group: free calls of another account go first and hold every lane, so
   * every call below arrives while they are in flight and the next statement takes them all.
   */
  async function meterGroup(db: Db, calls: Array<{ digest: string; options: MeterOptions }>) {
    const d = { ...deps, db };
    const first = Array.from({ length: METER_LANES }, () => meterKey(d, primer, { route: "/v1/usage", weight: 0, needsCredits: false }, () => {}));
    const settled = await Promise.allSettled(calls.map((c) => meterKey(d, c.digest, c.options, () => {})));
    await Promise.all(first);
    return settled;
  }

  const okOf = (r: PromiseSettledResult<Metered>) => {
    if (r.status === "rejected") throw new Error(`expected the call let through, got ${(r.reason as Error).message}`);
    return r.value;
  };
  const refusalOf = (r: PromiseSettledResult<Metered>) => {
    assert.equal(r.status, "rejected", "expected a refusal");
    const err = (r as PromiseRejectedResult).reason;
    assert.ok(err instanceof ApiError, String(err));
    return err;
  };

  test("one account, 20 calls in one group: counted 1 to 20 in order, one debit row of 20, identities read", async () => {
    const { db } = get();
    clock.advance(60_000);
    const c = await customer(2);
    const settled = await meterGroup(db, Array.from({ length: 20 }, (_, i) => ({ digest: c.digest, options: lookup(billable(i)) })));
    const metered = settled.map(okOf);
    assert.deepEqual(metered.map((m) => m.windows[0].used), Array.from({ length: 20 }, (_, i) => i + 1), "each call sees the ones before it");
    assert.deepEqual(metered.map((m) => m.available), Array.from({ length: 20 }, (_, i) => 24 - i), "balance before each call's debit");
    assert.deepEqual(metered.map((m) => m.identities[0]?.address), Array.from({ length: 20 }, (_, i) => billable(i)));
    const debits = await debitsOf(db, c.accountId);
    assert.deepEqual(debits.map((d) => d.matches), [20], "one debit row for the group");
    assert.match(debits[0].call_key, /^meter:[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/, "a UUIDv7 key");
    assert.equal((await rateWindowOf(db, c.accountId))?.minute_used, 20);
    assert.equal((await readCredits(db, c.accountId, clock.now())).available, 4);
  });

  test("calls arriving together while no statement is in flight: one statement for all of them, not the first alone", async () => {
    const { db } = get();
    clock.advance(60_000);
    const c = await customer(2);
    const groups: number[] = [];
    const lanes: Array<boolean | undefined> = [];
    const counting: Db = {
      ...db,
      async queryArrays(text, params, options) {
        if (text.includes("meter_calls(")) {
          groups.push((params![2] as string[]).length);
          lanes.push(options?.lane);
        }
        return await db.queryArrays(text, params, options);
      },
    };
    const d = { ...deps, db: counting };
    // nothing in flight: the twelve calls made in this turn (as the requests read from one poll of
    // the sockets) are metered by the statement the first of them starts
    const metered = await Promise.all(Array.from({ length: 12 }, (_, i) => meterKey(d, c.digest, lookup(billable(240 + i)), () => {})));
    assert.deepEqual(groups, [12], "one statement metered all twelve");
    assert.deepEqual(metered.map((m) => m.windows[0].used), Array.from({ length: 12 }, (_, i) => i + 1));
    assert.deepEqual((await debitsOf(db, c.accountId)).map((x) => x.matches), [12], "one debit row for the group");
    // a call on its own is not held for company: it is metered once the turn's work is done
    const alone = await meterKey(d, c.digest, lookup(billable(252)), () => {});
    assert.equal(alone.windows[0].used, 13);
    assert.deepEqual(groups, [12, 1]);
    assert.deepEqual(lanes, [true, true], "both on the lane's connection");
  });

  test("the group statements run on the lane's own connection (PostgreSQL: walletid meter lane)", async (t) => {
    const { db, url } = get();
    if (!url) return t.skip("PGlite has one session");
    clock.advance(60_000);
    const c = await customer(1);
    await meterGroup(db, Array.from({ length: 3 }, (_, i) => ({ digest: c.digest, options: lookup(billable(260 + i)) })));
    const lane = await db.query<{ query: string }>(
      "SELECT query FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'walletid meter lane'",
    );
    assert.equal(lane.length, 1, "one lane connection");
    assert.match(lane[0].query, /name: meter_calls/, "its last statement was the group's");
  });

  test("a turn end installed by the entry point decides when a free lane's statement starts", async () => {
    const { db } = get();
    clock.advance(60_000);
    const c = await customer(1);
    let release!: () => void;
    let waits = 0;
    useTurnEnd(() => {
      waits++;
      return new Promise<void>((resolve) => (release = resolve));
    });
    try {
      const calls = [meterKey({ ...deps, db }, c.digest, lookup(billable(260)), () => {})];
      calls.push(meterKey({ ...deps, db }, c.digest, lookup(billable(261)), () => {}));
      await new Promise((r) => setTimeout(r, 50));
      assert.equal(waits, 1, "one wait for both calls");
      assert.equal(await debitedTotal(db, c.accountId), 0, "nothing metered before the turn ends");
      release();
      const metered = await Promise.all(calls);
      assert.deepEqual(metered.map((m) => m.windows[0].used), [1, 2]);
    } finally {
      useTurnEnd(undefined);
    }
  });

  test("100 accounts in one group: each counted and billed once, one debit row each under the group's key", async () => {
    const { db } = get();
    clock.advance(60_000);
    const customers = [];
    for (let i = 0; i < 100; i++) customers.push(await customer(1));
    const settled = await meterGroup(db, customers.map((c, i) => ({ digest: c.digest, options: lookup(billable(i)) })));
    const metered = settled.map(okOf);
    assert.deepEqual(metered.map((m) => m.accountId), customers.map((c) => c.accountId));
    assert.ok(metered.every((m) => m.windows[0].used === 1 && m.available === 12 && m.matched === 1));
    assert.deepEqual(metered.map((m) => m.identities[0]?.address), customers.map((_, i) => billable(i)), "each call its own identity rows");
    const keys = new Set<string>();
    for (const c of customers) {
      const debits = await debitsOf(db, c.accountId);
      assert.deepEqual(debits.map((d) => d.matches), [1]);
      keys.add(debits[0].call_key);
      assert.equal((await rateWindowOf(db, c.accountId))?.minute_used, 1);
    }
    assert.equal(keys.size, 1, "the group wrote one debit per account under one key");
  });

  test("an unknown key, a revoked key, an unmetered and a metered account in one group: each answered as alone", async () => {
    const { db } = get();
    clock.advance(60_000);
    const unmetered = await customer(0);
    await db.query("UPDATE accounts SET unmetered = true WHERE id = $1", [unmetered.accountId]);
    const metered = await customer(1);
    const revoked = await customer(1);
    await db.query("UPDATE api_keys SET revoked_at = $2 WHERE id = $1", [revoked.keyId, clock.now()]);
    const unknown = await sha256Hex("wid_live_not_a_key_anyone_holds");
    const settled = await meterGroup(db, [
      { digest: unknown, options: lookup(billable(300)) },
      { digest: revoked.digest, options: lookup(billable(301)) },
      ...[302, 303, 304].map((i) => ({ digest: unmetered.digest, options: lookup(billable(i)) })),
      ...[305, 306].map((i) => ({ digest: metered.digest, options: lookup(billable(i)) })),
    ]);
    for (const r of settled.slice(0, 2)) assert.equal(refusalOf(r).status, 401);
    const free = settled.slice(2, 5).map(okOf);
    assert.deepEqual(free.map((m) => [m.accountId, m.unmetered, m.available, m.matched]), [302, 303, 304].map(() => [unmetered.accountId, true, null, 1]));
    assert.deepEqual(free.map((m) => m.identities[0]?.address), [302, 303, 304].map((i) => billable(i)), "each call its own identity rows");
    const billed = settled.slice(5).map(okOf);
    assert.deepEqual(billed.map((m) => [m.accountId, m.available, m.windows[0].used]), [[metered.accountId, 12, 1], [metered.accountId, 11, 2]]);
    assert.deepEqual(await debitsOf(db, unmetered.accountId), [], "an unmetered account is never debited");
    assert.equal((await rateWindowOf(db, unmetered.accountId))?.minute_used, 3, "its calls still count in its windows");
    assert.deepEqual((await debitsOf(db, metered.accountId)).map((d) => d.matches), [2]);
    assert.deepEqual(await debitsOf(db, revoked.accountId), [], "a revoked key bills nothing");
    assert.equal(await rateWindowOf(db, revoked.accountId), undefined, "nor counts anything");
  });

  test("refusals inside a group are exact and free; the other calls succeed and are billed exactly", async () => {
    const { db } = get();
    clock.advance(60_000);
    const poor = await customer(0); // no credits: every call that needs them is 402
    const nearLimit = await customer(1); // 59 of 60 units spent this minute: one more call fits
    const big = await customer(1); // a list over the plan's 50 addresses beside a fitting call
    const fine = await customer(1);
    const t = clock.now();
    const minute = new Date(t.getTime() - (t.getTime() % 60_000)).toISOString();
    await setRateWindow(db, nearLimit.accountId, {
      minuteStart: minute, minuteUsed: 59, dayStart: "2026-11-20T00:00:00Z", dayUsed: 59, monthStart: "2026-11-01T00:00:00Z", monthUsed: 59,
    });
    const tooMany: MeterOptions = { route: "/v1/batch", weight: 51, needsCredits: true, listSize: 51, billWallets: [billable(300)], wallets: 51 };
    const calls = [
      { digest: poor.digest, options: lookup(billable(200)) },
      { digest: fine.digest, options: lookup(billable(201)) },
      { digest: nearLimit.digest, options: lookup(billable(202)) },
      { digest: nearLimit.digest, options: lookup(billable(203)) },
      { digest: big.digest, options: tooMany },
      { digest: "0".repeat(64), options: lookup(billable(204)) },
      { digest: big.digest, options: lookup(billable(205)) },
      { digest: fine.digest, options: lookup(billable(206)) },
    ];
    const settled = await meterGroup(db, calls);

    assert.equal(refusalOf(settled[0]).code, "NO_CREDITS");
    assert.equal(refusalOf(settled[0]).status, 402);
    assert.deepEqual(okOf(settled[1]).windows[0].used, 1);
    assert.equal(okOf(settled[2]).windows[0].used, 60, "the 60th unit of the minute");
    const limited = refusalOf(settled[3]);
    assert.equal(limited.status, 429);
    assert.match(limited.message, /this request weighs 1 unit and 0 of 60 remain in the minute window/);
    assert.equal(refusalOf(settled[4]).code, "BATCH_SIZE_EXCEEDED");
    assert.equal(refusalOf(settled[5]).status, 401);
    assert.equal(okOf(settled[6]).windows[0].used, 1, "the refused list spent no units");
    assert.equal(okOf(settled[7]).windows[0].used, 2);

    assert.deepEqual(await debitsOf(db, poor.accountId), [], "a 402 bills nothing");
    assert.equal((await rateWindowOf(db, poor.accountId))?.minute_used ?? 0, 0, "nor spends units");
    assert.equal(await debitedTotal(db, nearLimit.accountId), 1, "the 429 billed nothing");
    assert.equal((await rateWindowOf(db, nearLimit.accountId))?.minute_used, 60);
    assert.equal(await debitedTotal(db, big.accountId), 1, "BATCH_SIZE_EXCEEDED billed nothing");
    assert.equal((await rateWindowOf(db, big.accountId))?.minute_used, 1);
    assert.deepEqual((await debitsOf(db, fine.accountId)).map((d) => d.matches), [2], "the fitting account in one debit");
    assert.equal((await rateWindowOf(db, fine.accountId))?.minute_used, 2);
  });

  test("a group on little credit: each call sees the matches before it, the overdraw is at most one call", async () => {
    const { db } = get();
    clock.advance(60_000);
    const c = await customer(1); // 12 credits
    const five = (k: number): MeterOptions => ({
      route: "/v1/batch",
      weight: 5,
      needsCredits: true,
      listSize: 5,
      billWallets: Array.from({ length: 5 }, (_, j) => billable(320 + 5 * k + j)),
      wallets: 5,
    });
    const settled = await meterGroup(db, Array.from({ length: 5 }, (_, k) => ({ digest: c.digest, options: five(k) })));
    // 12 -> 7 -> 2 -> -3, then NO_CREDITS
    assert.deepEqual(settled.map((r) => (r.status === "fulfilled" ? 200 : (r.reason as ApiError).status)), [200, 200, 200, 402, 402]);
    assert.equal(await debitedTotal(db, c.accountId), 15);
    assert.equal((await rateWindowOf(db, c.accountId))?.minute_used, 15);
  });

  test("matches the caller counted (a reverse page): billed as counted, within the call's bill wallets", async () => {
    const { db } = get();
    clock.advance(60_000);
    const c = await customer(1); // 12 credits
    // wallets in no link: probing links for them would bill nothing, so what is billed is the count
    const unlinked = (i: number) => address(i, "d9");
    const counted = (wallets: string[], billMatches: number): MeterOptions => ({
      route: "/v1/reverse/twitter/{handle}",
      weight: 2,
      needsCredits: true,
      billWallets: wallets,
      billMatches,
      wallets: wallets.length,
    });
    const settled = await meterGroup(db, [
      { digest: c.digest, options: counted([unlinked(1), unlinked(2), unlinked(3)], 3) },
      { digest: c.digest, options: counted([unlinked(4), unlinked(5)], 7) },
      { digest: c.digest, options: counted([unlinked(6)], -1) },
      { digest: c.digest, options: lookup(billable(380)) },
      { digest: c.digest, options: lookup(unlinked(7)) },
    ]);
    const metered = settled.map(okOf);
    assert.deepEqual(metered.map((m) => m.matched), [3, 2, 0, 1, 0], "counted, capped at the bill wallets, never negative; the others probed");
    assert.deepEqual(metered.map((m) => m.available), [12, 9, 7, 7, 6], "each call sees the matches before it");
    assert.deepEqual((await debitsOf(db, c.accountId)).map((d) => d.matches), [6], "one debit row for the group");
    assert.equal((await rateWindowOf(db, c.accountId))?.minute_used, 8);
    assert.equal((await readCredits(db, c.accountId, clock.now())).available, 6);
  });

  test("counted calls of an account that does not fit go one by one: the overdraw is still at most one call", async () => {
    const { db } = get();
    clock.advance(60_000);
    const c = await customer(1); // 12 credits
    const page = (k: number): MeterOptions => {
      const wallets = Array.from({ length: 5 }, (_, j) => billable(350 + 5 * k + j));
      return { route: "/v1/reverse/twitter/{handle}", weight: 2, needsCredits: true, billWallets: wallets, billMatches: 5, wallets: 5 };
    };
    const settled = await meterGroup(db, Array.from({ length: 5 }, (_, k) => ({ digest: c.digest, options: page(k) })));
    // 12 -> 7 -> 2 -> -3, then NO_CREDITS
    assert.deepEqual(settled.map((r) => (r.status === "fulfilled" ? 200 : (r.reason as ApiError).status)), [200, 200, 200, 402, 402]);
    assert.equal(await debitedTotal(db, c.accountId), 15);
  });

  test("a statement that fails before its commit: every call of its group is refused, none billed", async () => {
    const { db } = get();
    clock.advance(60_000);
    const c = await customer(1);
    let fail = true;
    const failing: Db = {
      ...db,
      async queryArrays(text: string, params?: readonly unknown[]) {
        if (fail && text.includes("meter_calls(")) {
          fail = false;
          throw Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" });
        }
        return await db.queryArrays(text, params);
      },
    };
    const d = { ...deps, db: failing };
    const settled = await Promise.allSettled(Array.from({ length: 6 }, (_, i) => meterKey(d, c.digest, lookup(billable(210 + i)), () => {})));
    const answered = settled.filter((r) => r.status === "fulfilled").length;
    assert.ok(answered < 6, "the failed statement's calls were not let through");
    assert.equal(await debitedTotal(db, c.accountId), answered, "billed exactly the calls let through");
    assert.equal((await rateWindowOf(db, c.accountId))?.minute_used ?? 0, answered);
  });

  test("a stalled statement does not hold the calls behind it: another lane meters them while it hangs", async () => {
    const { db } = get();
    clock.advance(60_000);
    const c = await customer(1);
    let release!: () => void;
    const hung = new Promise<void>((resolve) => (release = resolve));
    let stall = true;
    let sent!: () => void;
    const inFlight = new Promise<void>((resolve) => (sent = resolve));
    const lanes: Array<boolean | undefined> = [];
    const stalling: Db = {
      ...db,
      async queryArrays(text, params, options) {
        if (text.includes("meter_calls(")) lanes.push(options?.lane);
        if (stall && text.includes("meter_calls(")) {
          stall = false;
          sent();
          await hung; // a database that stopped answering this statement
          throw Object.assign(new Error("canceling statement due to statement timeout"), { code: "57014" });
        }
        return await db.queryArrays(text, params, options);
      },
    };
    const d = { ...deps, db: stalling };
    const first = meterKey(d, c.digest, lookup(billable(230)), () => {});
    void first.catch(() => {});
    await inFlight; // the calls below arrive while its statement hangs
    const behind = await Promise.race([
      Promise.allSettled(Array.from({ length: 3 }, (_, i) => meterKey(d, c.digest, lookup(billable(231 + i)), () => {}))),
      new Promise<"held">((resolve) => setTimeout(() => resolve("held"), 2_000)),
    ]);
    release();
    assert.notEqual(behind, "held", "the calls behind the stalled statement were answered while it hung");
    assert.deepEqual((behind as PromiseSettledResult<Metered>[]).map((r) => r.status), ["fulfilled", "fulfilled", "fulfilled"]);
    assert.deepEqual(lanes, [true, false], "the stall lane's statement on the pool, not behind the one that hangs");
    await assert.rejects(first);
    assert.equal(await debitedTotal(db, c.accountId), 3, "only the calls answered are billed");
  });

  test("an answer lost after the commit: its calls are refused, billed once, and the statement never runs again", async () => {
    const { db } = get();
    clock.advance(60_000);
    const c = await customer(1);
    let lose = true;
    let statements = 0;
    const losing: Db = {
      ...db,
      async queryArrays(text: string, params?: readonly unknown[]) {
        const rows = await db.queryArrays(text, params);
        if (text.includes("meter_calls(")) {
          statements++;
          if (lose) {
            lose = false;
            throw Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" });
          }
        }
        return rows;
      },
    };
    const d = { ...deps, db: losing };
    const settled = await Promise.allSettled(Array.from({ length: 4 }, (_, i) => meterKey(d, c.digest, lookup(billable(220 + i)), () => {})));
    assert.equal(settled[0].status, "rejected", "the first call's statement committed, its answer was lost");
    const refused = settled.filter((r) => r.status === "rejected").length;
    const debits = await debitsOf(db, c.accountId);
    assert.equal(debits.reduce((n, x) => n + x.matches, 0), 4, "each call billed once, answered or not");
    assert.equal(new Set(debits.map((x) => x.call_key)).size, statements, "one debit key per statement, none repeated");
    assert.equal((await rateWindowOf(db, c.accountId))?.minute_used, 4);
    assert.ok(refused >= 1);
  });

  test("nothing is answered before its commit: calls held behind a lock answer only once it is released", async (t) => {
    const { db, url } = get();
    if (!url) return t.skip("PGlite runs one statement at a time: a held lock would block the test itself");
    clock.advance(60_000);
    const c = await customer(1);
    okOf((await meterGroup(db, [{ digest: c.digest, options: lookup(billable(230)) }]))[0]);
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let locked!: () => void;
    const lockTaken = new Promise<void>((resolve) => (locked = resolve));
    const holder = db.transaction(async (tx) => {
      await tx.query("SELECT 1 FROM rate_windows WHERE account_id = $1 FOR UPDATE", [c.accountId]);
      locked();
      await held;
    });
    await lockTaken;
    let answered = 0;
    const calls = Array.from({ length: 5 }, (_, i) => meterKey(deps, c.digest, lookup(billable(231 + i)), () => {}).then((m) => (answered++, m)));
    await new Promise((r) => setTimeout(r, 400));
    assert.equal(answered, 0, "no call answered while its statement waits");
    assert.equal(await debitedTotal(db, c.accountId), 1, "and nothing of theirs is visible");
    release();
    await holder;
    const metered = await Promise.all(calls);
    assert.deepEqual(metered.map((m) => m.windows[0].used).sort((a, b) => a - b), [2, 3, 4, 5, 6]);
    assert.equal(await debitedTotal(db, c.accountId), 6);
  });
});

eachDatabase("group-committed metering across two server processes", (get) => {
  const clock = createClock("2026-11-20T12:00:30Z");
  const servers = serverPair(get, clock, (db) => {
    const observed_at = new Date(clock.now().getTime() - 86_400_000).toISOString();
    return importIndex(
      db,
      Array.from({ length: 200 }, (_, i) => ({ wallet: billable(i), kind: "twitter", route: "x-signin", handle: `grouped${i}`, observed_at })),
      clock.now(),
    );
  });

  const lookupOn = (i: number, key: string, wallet: string) => servers[i % servers.length].request(`/api/v1/wallet/${wallet}`, { key });

  test("100 concurrent lookups of one account on a 60-a-minute plan: exactly 60 answered, each its own unit, 60 billed", async () => {
    const { db } = get();
    clock.advance(60_000);
    const c = await createCustomer(db, { packs: [{ pack: "Agent", quantity: 10 }], now: clock.now() });
    const responses = await Promise.all(
      Array.from({ length: 100 }, async (_, i) => {
        const res = await lookupOn(i, c.apiKey, billable(i));
        return { status: res.status, remaining: res.headers.get("x-ratelimit-remaining"), text: await res.text() };
      }),
    );
    const ok = responses.filter((r) => r.status === 200);
    for (const r of responses) assert.ok(r.status === 200 || r.status === 429, r.text);
    assert.equal(ok.length, 60, "the minute window holds across both processes");
    assert.deepEqual(
      ok.map((r) => Number(r.remaining)).sort((a, b) => a - b),
      Array.from({ length: 60 }, (_, i) => i),
      "every answered call counted one unit of its own",
    );
    assert.equal(await debitedTotal(db, c.accountId), 60, "billed the 60 answered, the 40 refused free");
    assert.equal((await rateWindowOf(db, c.accountId))?.minute_used, 60);
  });

  test("40 accounts, two calls each on both processes: each account counted and billed exactly twice", async () => {
    const { db } = get();
    clock.advance(60_000);
    const customers = [];
    for (let i = 0; i < 40; i++) customers.push(await createCustomer(db, { packs: [{ pack: "Agent", quantity: 1 }], now: clock.now() }));
    const responses = await Promise.all(
      customers.flatMap((c, i) => [0, 1].map(async (j) => {
        const res = await lookupOn(j, c.apiKey, billable(2 * i + j));
        return { status: res.status, text: await res.text() };
      })),
    );
    for (const r of responses) assert.equal(r.status, 200, r.text);
    for (const c of customers) {
      assert.equal(await debitedTotal(db, c.accountId), 2);
      assert.equal((await rateWindowOf(db, c.accountId))?.minute_used, 2);
      assert.equal((await readCredits(db, c.accountId, clock.now())).available, 10);
    }
  });
});
