// Match credits through a real listening server: what is billed (x_or_farcaster), debits keyed
// on the call, overdraw then NO_CREDITS, earliest-expiring pack first, pack expiry, and the
// rolling free allowance of email accounts.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { grantCredits } from "../../src/ledger/accounts.ts";
import { eachDatabase } from "../support/db.ts";
import { createClock, createCustomer, startServer, type TestServer } from "../support/server.ts";
import {
  address,
  assertErrorBody,
  batchInit,
  debitsOf,
  expectStatus,
  grantIdsOf,
  importIndex,
  rateWindowOf,
  type DebitRow,
} from "../support/http.ts";

const START = "2026-11-20T12:00:30Z";
const DAY = 86_400_000;

/** Wallets with a twitter handle only: billable. */
const tw = (i: number) => address(i, "b1");
const FARCASTER = address(1, "b2");
const BOTH = address(1, "b3");
const ENS = address(1, "e1");
const LENS = address(1, "e2");
const GITHUB = address(1, "e3");
const ENS_LENS_GITHUB = address(1, "e4");
const EMPTY = address(1, "e5");
const UNKNOWN = address(1, "c");

function index() {
  return [
    ...Array.from({ length: 60 }, (_, i) => ({ wallet: tw(i + 1), kind: "twitter", route: "x-signin", handle: `tw${i + 1}` })),
    { wallet: FARCASTER, kind: "farcaster", route: "farcaster-verification", fid: 3, username: "fcuser", followers: 10 },
    { wallet: BOTH, kind: "twitter", route: "x-signin", handle: "bothx" },
    { wallet: BOTH, kind: "farcaster", route: "farcaster-verification", fid: 4, username: "bothfc", followers: 5 },
    { wallet: ENS, kind: "ens", route: "ens-primary", name: "someone.eth" },
    { wallet: LENS, kind: "lens", route: "lens-profile", handle: "someone.lens" },
    { wallet: GITHUB, kind: "github", route: "github-signin", username: "someone" },
    { wallet: ENS_LENS_GITHUB, kind: "ens", route: "ens-primary", name: "other.eth" },
    { wallet: ENS_LENS_GITHUB, kind: "lens", route: "lens-profile", handle: "other.lens" },
    { wallet: ENS_LENS_GITHUB, kind: "github", route: "github-signin", username: "other" },
    { wallet: EMPTY, kind: "empty", route: "x-signin" },
  ];
}

function range(from: number, to: number): string[] {
  return Array.from({ length: to - from + 1 }, (_, i) => tw(from + i));
}

/** Debit rows written since `before` (a previous read of the same account). */
function newRows(before: DebitRow[], now: DebitRow[]): DebitRow[] {
  assert.deepEqual(now.slice(0, before.length), before, "earlier debits are never rewritten");
  return now.slice(before.length);
}

eachDatabase("match credits", (get) => {
  let server: TestServer;

  before(async () => {
    server = await startServer(get().db, { clock: createClock(START) });
    await importIndex(get().db, index(), new Date("2026-11-01T00:00:00Z"));
  });
  after(async () => {
    await server.close();
  });

  async function credits(key: string) {
    const res = await expectStatus(await server.request("/api/v1/usage", { key }), 200, "GET /usage");
    return res.body.data.credits;
  }

  test("an Agent pack is 12 matches for 12 months", async () => {
    server.clock.set(START);
    const c = await createCustomer(get().db, { packs: [{ pack: "Agent" }], now: server.clock.now() });
    assert.deepEqual(await credits(c.apiKey), {
      available: 12,
      unmetered: false,
      on_free_allowance: false,
      free_window_resets_at: null,
    });
    const [grant] = await get().db.query<{ pack: string; matches: number; granted_at: Date; expires_at: Date }>(
      "SELECT pack, matches, granted_at, expires_at FROM credit_grants WHERE account_id = $1",
      [c.accountId],
    );
    assert.equal(grant.pack, "Agent");
    assert.equal(grant.matches, 12);
    assert.equal(grant.expires_at.toISOString(), "2027-11-20T12:00:30.000Z");
  });

  test("each twitter or farcaster lookup debits exactly 1, keyed on the call; ens/lens/github-only and misses debit 0", async () => {
    server.clock.set(START);
    const c = await createCustomer(get().db, { packs: [{ pack: "Agent" }], now: server.clock.now() });
    const [grant] = await grantIdsOf(get().db, c.accountId);
    let seen: DebitRow[] = [];

    for (const [wallet, shows] of [
      [tw(1), "twitter"],
      [FARCASTER, "farcaster"],
      [BOTH, "twitter"],
      [tw(1), "twitter"], // the same wallet again is a new call, billed again
    ] as const) {
      const res = await expectStatus(await server.request(`/api/v1/wallet/${wallet}`, { key: c.apiKey }), 200, wallet);
      assert.ok(res.body.data?.[shows], `${wallet} resolves to ${shows}: ${res.text}`);
      const all = await debitsOf(get().db, c.accountId);
      const rows = newRows(seen, all);
      assert.equal(rows.length, 1, `one debit row for ${wallet}: ${JSON.stringify(rows)}; body ${res.text}`);
      assert.equal(rows[0].matches, 1);
      assert.equal(rows[0].source, "pack");
      assert.equal(rows[0].grant_id, grant.id);
      assert.equal(rows[0].part, 0);
      assert.equal(rows[0].created_at.toISOString(), server.clock.now().toISOString());
      seen = all;
    }
    const keys = seen.map((d) => d.call_key);
    assert.equal(new Set(keys).size, 4, `every call has its own debit key: ${keys.join(", ")}`);
    assert.deepEqual(seen.map((d) => d.drawn_after), [1, 2, 3, 4]);

    for (const wallet of [ENS, LENS, GITHUB, ENS_LENS_GITHUB, EMPTY, UNKNOWN]) {
      const res = await expectStatus(await server.request(`/api/v1/wallet/${wallet}`, { key: c.apiKey }), 200, wallet);
      assert.equal(res.body.data?.twitter, undefined, res.text);
      assert.equal(res.body.data?.farcaster, undefined, res.text);
      assert.deepEqual(await debitsOf(get().db, c.accountId), seen, `no debit for ${wallet}: ${res.text}`);
    }
    const ensOnly = await expectStatus(await server.request(`/api/v1/wallet/${ENS_LENS_GITHUB}`, { key: c.apiKey }), 200);
    assert.equal(ensOnly.body.meta.found, true, ensOnly.text);
    assert.equal(ensOnly.body.data.ens_name, "other.eth", ensOnly.text);

    // a batch bills once per billable wallet after deduplication, under one call key
    const batch = await expectStatus(
      await server.request(
        "/api/v1/batch",
        batchInit(c.apiKey, [tw(2), tw(2).toUpperCase().replace("0X", "0x"), FARCASTER, BOTH, ENS, ENS_LENS_GITHUB, EMPTY, UNKNOWN]),
      ),
      200,
    );
    assert.deepEqual(batch.body.meta, { requested: 7, found: 5, not_found: 2, matched: 3 }, batch.text);
    const batchRows = newRows(seen, await debitsOf(get().db, c.accountId));
    assert.equal(batchRows.length, 1, JSON.stringify(batchRows));
    assert.equal(batchRows[0].matches, 3);
    assert.ok(!keys.includes(batchRows[0].call_key), "the batch has its own debit key");

    assert.equal((await credits(c.apiKey)).available, 12 - 4 - 3);
  });

  test("the balance is checked, not reserved: with 1 credit left a batch of 5 billable wallets bills 5, then NO_CREDITS", async () => {
    server.clock.set(START);
    const c = await createCustomer(get().db, { packs: [{ pack: "Agent" }], now: server.clock.now() });

    const first = await expectStatus(await server.request("/api/v1/batch", batchInit(c.apiKey, range(1, 11))), 200);
    assert.equal(first.body.meta.matched, 11, first.text);
    assert.equal((await credits(c.apiKey)).available, 1);
    const seen = await debitsOf(get().db, c.accountId);

    const over = await expectStatus(
      await server.request("/api/v1/batch", batchInit(c.apiKey, [...range(12, 16), ENS, UNKNOWN])),
      200,
    );
    assert.deepEqual(over.body.meta, { requested: 7, found: 6, not_found: 1, matched: 5 }, over.text);
    assert.equal(over.body.data.filter((row: unknown) => row !== null).length, 6, over.text);
    const rows = newRows(seen, await debitsOf(get().db, c.accountId));
    assert.equal(rows.reduce((sum, r) => sum + r.matches, 0), 5, `the whole batch is billed: ${JSON.stringify(rows)}`);
    assert.equal(new Set(rows.map((r) => r.call_key)).size, 1, "one call, one key");
    assert.equal(Math.max(...rows.map((r) => r.drawn_after ?? 0)), 16, "the pack is overdrawn by 4");
    const drained = await credits(c.apiKey);
    assert.equal(drained.available, 0, JSON.stringify(drained));
    const windowBefore = await rateWindowOf(get().db, c.accountId);

    const refused = await expectStatus(await server.request(`/api/v1/wallet/${tw(20)}`, { key: c.apiKey }), 402);
    assertErrorBody(refused, "NO_CREDITS");
    const refusedMiss = await expectStatus(await server.request(`/api/v1/wallet/${UNKNOWN}`, { key: c.apiKey }), 402);
    assertErrorBody(refusedMiss, "NO_CREDITS");
    const refusedBatch = await expectStatus(await server.request("/api/v1/batch", batchInit(c.apiKey, [tw(21)])), 402);
    assertErrorBody(refusedBatch, "NO_CREDITS");
    assert.equal((await debitsOf(get().db, c.accountId)).length, seen.length + rows.length, "refused calls debit nothing");
    assert.deepEqual(await rateWindowOf(get().db, c.accountId), windowBefore, "refused calls count no rate units");

    const usage = await expectStatus(await server.request("/api/v1/usage", { key: c.apiKey }), 200);
    assert.equal(usage.body.data.credits.available, 0, usage.text);
    const stats = await expectStatus(await server.request("/api/v1/stats", { key: c.apiKey }), 200);
    assert.equal(typeof stats.body.data.total_wallets, "number", stats.text);
  });

  test("the pack that expires first is drawn first, then the next one", async () => {
    server.clock.set(START);
    // granted first but expiring last, then granted second but expiring first
    const c = await createCustomer(get().db, {
      packs: [
        { pack: "Agent", at: new Date("2026-10-20T00:00:00Z") },
        { pack: "Agent", at: new Date("2026-01-10T00:00:00Z") },
      ],
      now: new Date("2026-01-10T00:00:00Z"),
    });
    const [later, sooner] = await grantIdsOf(get().db, c.accountId);
    assert.ok(sooner.expires_at < later.expires_at);
    assert.equal((await credits(c.apiKey)).available, 24);

    await expectStatus(await server.request(`/api/v1/wallet/${tw(1)}`, { key: c.apiKey }), 200);
    const [one] = await debitsOf(get().db, c.accountId);
    assert.equal(one.grant_id, sooner.id, "the earliest-expiring pack pays first");
    assert.equal(one.drawn_after, 1);

    // 12 more: 11 empty the sooner pack, 1 spills into the later one, under one call key
    const res = await expectStatus(await server.request("/api/v1/batch", batchInit(c.apiKey, range(2, 13))), 200);
    assert.equal(res.body.meta.matched, 12, res.text);
    const rows = (await debitsOf(get().db, c.accountId)).slice(1);
    assert.deepEqual(
      rows.map((r) => ({ part: r.part, grant_id: r.grant_id, matches: r.matches, drawn_after: r.drawn_after, source: r.source })),
      [
        { part: 0, grant_id: sooner.id, matches: 11, drawn_after: 12, source: "pack" },
        { part: 1, grant_id: later.id, matches: 1, drawn_after: 1, source: "pack" },
      ],
    );
    assert.equal(rows[0].call_key, rows[1].call_key);
    assert.equal((await credits(c.apiKey)).available, 11);

    // the sooner pack is empty: the next call draws on the later one, after the spill
    await expectStatus(await server.request(`/api/v1/wallet/${tw(14)}`, { key: c.apiKey }), 200);
    const last = (await debitsOf(get().db, c.accountId)).at(-1)!;
    assert.deepEqual({ grant_id: last.grant_id, matches: last.matches, drawn_after: last.drawn_after }, { grant_id: later.id, matches: 1, drawn_after: 2 });
    assert.equal((await credits(c.apiKey)).available, 10);
  });

  test("a pack past 12 months no longer counts", async () => {
    server.clock.set(START);
    const c = await createCustomer(get().db, {
      packs: [
        { pack: "Agent", at: new Date("2025-12-01T00:00:00Z") },
        { pack: "Agent", at: new Date(START) },
      ],
      now: new Date("2025-12-01T00:00:00Z"),
    });
    const [old, fresh] = await grantIdsOf(get().db, c.accountId);
    assert.equal(old.expires_at.toISOString(), "2026-12-01T00:00:00.000Z");

    const res = await expectStatus(await server.request("/api/v1/batch", batchInit(c.apiKey, range(1, 3))), 200);
    assert.equal(res.body.meta.matched, 3, res.text);
    assert.deepEqual((await debitsOf(get().db, c.accountId)).map((d) => d.grant_id), [old.id]);

    server.clock.set("2026-11-30T23:59:59Z");
    assert.equal((await credits(c.apiKey)).available, 21);
    server.clock.set("2026-12-01T00:00:00Z");
    assert.equal((await credits(c.apiKey)).available, 12, "the 9 left in the expired pack are gone");

    await expectStatus(await server.request(`/api/v1/wallet/${tw(4)}`, { key: c.apiKey }), 200);
    const last = (await debitsOf(get().db, c.accountId)).at(-1)!;
    assert.equal(last.grant_id, fresh.id, "the expired pack is never drawn");
    assert.equal((await credits(c.apiKey)).available, 11);

    // past the second pack's 12 months nothing is left, and this account has no free allowance
    server.clock.set("2027-11-20T12:00:30Z");
    assert.deepEqual(await credits(c.apiKey), {
      available: 0,
      unmetered: false,
      on_free_allowance: false,
      free_window_resets_at: null,
    });
    const refused = await expectStatus(await server.request(`/api/v1/wallet/${tw(5)}`, { key: c.apiKey }), 402);
    assertErrorBody(refused, "NO_CREDITS");
    assert.equal((await debitsOf(get().db, c.accountId)).length, 2);
  });

  test("an email account without packs has 100 free matches per rolling 30 days", async () => {
    const t1 = new Date(START);
    server.clock.set(t1);
    const c = await createCustomer(get().db, { email: "free@example.com", now: t1 });
    assert.deepEqual(await credits(c.apiKey), {
      available: 100,
      unmetered: false,
      on_free_allowance: true,
      free_window_resets_at: null,
    });

    await expectStatus(await server.request(`/api/v1/wallet/${tw(1)}`, { key: c.apiKey }), 200);
    let debits = await debitsOf(get().db, c.accountId);
    assert.equal(debits.length, 1);
    assert.equal(debits[0].source, "free");
    assert.equal(debits[0].grant_id, null);
    assert.equal(debits[0].matches, 1);
    const firstReset = new Date(t1.getTime() + 30 * DAY).toISOString();
    assert.deepEqual(await credits(c.apiKey), {
      available: 99,
      unmetered: false,
      on_free_allowance: true,
      free_window_resets_at: firstReset,
    });

    const t2 = new Date(t1.getTime() + DAY);
    server.clock.set(t2);
    const batch = await expectStatus(await server.request("/api/v1/batch", batchInit(c.apiKey, range(1, 50))), 200);
    assert.equal(batch.body.meta.matched, 50, batch.text);
    debits = await debitsOf(get().db, c.accountId);
    assert.deepEqual(debits.map((d) => [d.source, d.matches]), [["free", 1], ["free", 50]]);
    let now = await credits(c.apiKey);
    assert.equal(now.available, 49);
    assert.equal(now.free_window_resets_at, firstReset, "the window is measured from the first free debit in it");

    // 30 days after the first debit, it no longer counts
    server.clock.set(firstReset);
    now = await credits(c.apiKey);
    assert.equal(now.available, 50);
    assert.equal(now.free_window_resets_at, new Date(t2.getTime() + 30 * DAY).toISOString());
    server.clock.set(new Date(t2.getTime() + 30 * DAY));
    assert.deepEqual(await credits(c.apiKey), {
      available: 100,
      unmetered: false,
      on_free_allowance: true,
      free_window_resets_at: null,
    });

    // spend all 100, get refused, and have them back 30 days later
    const t3 = new Date(t2.getTime() + 31 * DAY);
    server.clock.set(t3);
    await expectStatus(await server.request("/api/v1/batch", batchInit(c.apiKey, range(1, 50))), 200);
    server.clock.set(new Date(t3.getTime() + 60_000));
    await expectStatus(await server.request("/api/v1/batch", batchInit(c.apiKey, range(11, 60))), 200);
    assert.equal((await credits(c.apiKey)).available, 0);
    const refused = await expectStatus(await server.request(`/api/v1/wallet/${tw(1)}`, { key: c.apiKey }), 402);
    assertErrorBody(refused, "NO_CREDITS");
    assert.equal((await debitsOf(get().db, c.accountId)).length, 4, "the refused lookup debited nothing");
    const spent = await credits(c.apiKey);
    assert.equal(spent.on_free_allowance, true);
    assert.equal(spent.free_window_resets_at, new Date(t3.getTime() + 30 * DAY).toISOString());

    server.clock.set(new Date(t3.getTime() + 30 * DAY + 60_000));
    assert.equal((await credits(c.apiKey)).available, 100);
    await expectStatus(await server.request(`/api/v1/wallet/${tw(1)}`, { key: c.apiKey }), 200);
    assert.equal((await debitsOf(get().db, c.accountId)).at(-1)?.source, "free");
  });

  test("an account created without an email and without a pack gets 402 NO_CREDITS", async () => {
    server.clock.set(START);
    const c = await createCustomer(get().db, { now: server.clock.now() });
    assert.deepEqual(await credits(c.apiKey), {
      available: 0,
      unmetered: false,
      on_free_allowance: false,
      free_window_resets_at: null,
    });
    for (const wallet of [tw(1), UNKNOWN]) {
      const res = await expectStatus(await server.request(`/api/v1/wallet/${wallet}`, { key: c.apiKey }), 402, wallet);
      assertErrorBody(res, "NO_CREDITS");
    }
    const batch = await expectStatus(await server.request("/api/v1/batch", batchInit(c.apiKey, [tw(1)])), 402);
    assertErrorBody(batch, "NO_CREDITS");
    assert.deepEqual(await debitsOf(get().db, c.accountId), []);
    const w = await rateWindowOf(get().db, c.accountId);
    assert.deepEqual([w?.minute_used ?? 0, w?.day_used ?? 0, w?.month_used ?? 0], [0, 0, 0], "refused calls count no rate units");
    await expectStatus(await server.request("/api/v1/stats", { key: c.apiKey }), 200);
  });

  test("a granted pack ends the free allowance until its credits are used up", async () => {
    server.clock.set(START);
    const c = await createCustomer(get().db, { email: "upgrade@example.com", now: server.clock.now() });
    await expectStatus(await server.request(`/api/v1/wallet/${tw(1)}`, { key: c.apiKey }), 200);
    assert.equal((await credits(c.apiKey)).available, 99);

    server.clock.advance(60_000);
    const granted = await grantCredits(get().db, {
      accountId: c.accountId,
      pack: "Agent",
      quantity: 1,
      grantKey: "upgrade",
      now: server.clock.now(),
    });
    assert.equal(granted.granted, true);
    assert.deepEqual(await credits(c.apiKey), {
      available: 12,
      unmetered: false,
      on_free_allowance: false,
      free_window_resets_at: null,
    });
    const [grant] = await grantIdsOf(get().db, c.accountId);

    await expectStatus(await server.request("/api/v1/batch", batchInit(c.apiKey, range(2, 12))), 200);
    let debits = await debitsOf(get().db, c.accountId);
    assert.deepEqual(debits.map((d) => [d.source, d.grant_id, d.matches]), [["free", null, 1], ["pack", grant.id, 11]]);
    assert.equal((await credits(c.apiKey)).available, 1);

    // 1 left in the pack: a batch of 3 takes it, and the rest falls to the free allowance
    const res = await expectStatus(await server.request("/api/v1/batch", batchInit(c.apiKey, range(13, 15))), 200);
    assert.equal(res.body.meta.matched, 3, res.text);
    debits = await debitsOf(get().db, c.accountId);
    const last = debits.slice(2);
    assert.deepEqual(
      last.map((d) => ({ part: d.part, source: d.source, grant_id: d.grant_id, matches: d.matches })),
      [
        { part: 0, source: "pack", grant_id: grant.id, matches: 1 },
        { part: 1, source: "free", grant_id: null, matches: 2 },
      ],
    );
    assert.deepEqual(await credits(c.apiKey), {
      available: 97,
      unmetered: false,
      on_free_allowance: true,
      free_window_resets_at: new Date(new Date(START).getTime() + 30 * DAY).toISOString(),
    });
  });
});
