// GET /reverse/twitter/{handle} and /reverse/farcaster/{username}: order, keyset paging,
// cursors bound to their lookup and signed, the attested-only rule, errors and billing.
import { test } from "node:test";
import assert from "node:assert/strict";
import { eachDatabase } from "../support/db.ts";
import { createCustomer, fixtureSuite, startServer } from "../support/server.ts";
import { W } from "../support/fixtures.ts";
import {
  address,
  assertErrorBody,
  assertNoRateHeaders,
  debitsOf,
  debitedTotal,
  expectStatus,
  importIndex,
  rateHeaders,
  rateWindowOf,
  setRateWindow,
} from "../support/http.ts";

const CROWD = 250;

/** Wallet i of the crowd: followers in ties of tens, some unknown, some with no farcaster at all. */
function crowdFollowers(i: number): number | null | "none" {
  if (i % 5 === 0) return "none";
  if (i % 11 === 0) return null;
  return (i % 7) * 10;
}

function crowdObservations(observedAt: string): object[] {
  const lines: object[] = [];
  for (let i = 1; i <= CROWD; i++) {
    const wallet = address(i, "c");
    lines.push({ wallet, kind: "twitter", route: i % 3 === 0 ? "correlation" : "x-signin", handle: "Crowd", observed_at: observedAt });
    const followers = crowdFollowers(i);
    if (followers !== "none") {
      lines.push({
        wallet,
        kind: "farcaster",
        route: "farcaster-verification",
        fid: 10_000 + i,
        username: `crowd${i}`,
        ...(followers === null ? {} : { followers }),
        observed_at: observedAt,
      });
    }
  }
  return lines;
}

/** The order the spec asks for: followers descending, wallets without a count last, then address. */
function expectedCrowdOrder(): string[] {
  const rows = Array.from({ length: CROWD }, (_, k) => {
    const f = crowdFollowers(k + 1);
    return { wallet: address(k + 1, "c"), followers: typeof f === "number" ? f : null };
  });
  rows.sort(
    (a, b) =>
      (b.followers ?? -1) - (a.followers ?? -1) || (a.wallet < b.wallet ? -1 : a.wallet > b.wallet ? 1 : 0),
  );
  return rows.map((r) => r.wallet);
}

// reverse farcaster "shared" (fid 500): who is returned under the attested-only rule
const S = {
  verifiedOnly: address(1, "d"),
  besideCorrelation: address(2, "d"),
  correlatedLink: address(3, "d"),
  besideUnclassified: address(4, "d"),
  fullyAttested: address(5, "d"),
};

function sharedObservations(observedAt: string): object[] {
  const fc = (wallet: string, route: string) => ({
    wallet,
    kind: "farcaster",
    route,
    fid: 500,
    username: "Shared",
    followers: 42,
    observed_at: observedAt,
  });
  return [
    fc(S.verifiedOnly, "farcaster-verification"),
    fc(S.besideCorrelation, "farcaster-verification"),
    { wallet: S.besideCorrelation, kind: "twitter", route: "correlation", handle: "maybe_shared", observed_at: observedAt },
    fc(S.correlatedLink, "correlation"),
    fc(S.besideUnclassified, "farcaster-verification"),
    { wallet: S.besideUnclassified, kind: "github", route: "scraper-legacy", username: "shared-gh", observed_at: observedAt },
    fc(S.fullyAttested, "farcaster-verification"),
    { wallet: S.fullyAttested, kind: "twitter", route: "x-signin", handle: "shared_x", observed_at: observedAt },
    { wallet: S.fullyAttested, kind: "ens", route: "ens-primary", name: "shared.eth", observed_at: observedAt },
  ];
}

eachDatabase("GET /reverse", (get) => {
  // Scale: 25,000 matches and the Startup preset (300 a minute), so paging never hits a window
  const suite = fixtureSuite(get, {
    packs: [{ pack: "Scale" }],
    load: async (db, now) => {
      const observedAt = new Date(now.getTime() - 86_400_000).toISOString();
      await importIndex(db, [...crowdObservations(observedAt), ...sharedObservations(observedAt)], now);
    },
  });
  const { clock, nextMinute } = suite;

  function reverse(path: string, options: { key?: string; cursor?: string } = {}) {
    const query = options.cursor === undefined ? "" : `?cursor=${encodeURIComponent(options.cursor)}`;
    return suite.server.request(`/api/v1/reverse/${path}${query}`, { key: options.key ?? suite.key });
  }

  test("a handle of 250 wallets pages to the end in order: no row lost or repeated, one credit per wallet", async () => {
    nextMinute();
    const { db } = get();
    const debitsBefore = (await debitsOf(db, suite.accountId)).length;
    const seen: string[] = [];
    const pages: Array<{ returned: number; truncated: boolean }> = [];
    let cursor: string | undefined;
    do {
      const page = await expectStatus(await reverse("twitter/Crowd", { cursor }), 200);
      assert.equal(page.body.meta.handle, "crowd");
      assert.equal(page.body.meta.total_count, CROWD);
      assert.equal(page.body.meta.returned_count, page.body.data.length);
      for (const row of page.body.data) {
        assert.equal(row.twitter.handle, "crowd");
        assert.equal(typeof row.quality_score, "number");
        seen.push(row.wallet);
      }
      pages.push({ returned: page.body.data.length, truncated: page.body.meta.truncated });
      cursor = page.body.meta.next_cursor ?? undefined;
      if (page.body.meta.truncated) assert.equal(typeof cursor, "string");
      else assert.equal(page.body.meta.next_cursor, null);
    } while (cursor);

    assert.deepEqual(pages, [
      { returned: 100, truncated: true },
      { returned: 100, truncated: true },
      { returned: 50, truncated: false },
    ]);
    assert.equal(new Set(seen).size, CROWD, "no wallet repeated");
    assert.deepEqual(seen, expectedCrowdOrder(), "followers descending, unknown last, ties by address");

    const debits = (await debitsOf(db, suite.accountId)).slice(debitsBefore);
    assert.deepEqual(
      debits.map((d) => d.matches),
      [100, 100, 50],
      "each page is one debit of exactly the wallets it returned",
    );
  });

  test("a reverse row: the asked handle, farcaster when attached, quality_score flat, no quality object", async () => {
    nextMinute();
    const page = await expectStatus(await reverse("twitter/@Carol_Alt"), 200);
    assert.equal(page.body.meta.handle, "carol_alt");
    assert.equal(page.body.data.length, 1);
    const row = page.body.data[0];
    assert.equal(row.wallet, W.twoHandles);
    assert.equal(row.twitter.handle, "carol_alt");
    assert.equal(row.twitter.also.handle, "carol", "the wallet's other live, attested handle");
    assert.equal(row.quality, undefined);
    assert.equal(typeof row.quality_score, "number");

    const alice = await expectStatus(await reverse("twitter/alice"), 200);
    assert.deepEqual(Object.keys(alice.body.data[0]).sort(), ["ens_name", "farcaster", "quality_score", "sources", "twitter", "wallet"]);
    assert.equal(alice.body.data[0].farcaster.followers, 100);
  });

  test("a reverse row is the wallet's batch row with its lookup's quality score, whatever identities it holds", async () => {
    // the page reads its wallets' identity rows itself: they must make the same records
    nextMinute();
    const lookups = ["twitter/alice", "twitter/bob", "twitter/carol", "twitter/dave_new", "twitter/frank", "twitter/gina"];
    lookups.push("twitter/kate_human", "twitter/leo", "farcaster/alice", "farcaster/mia", "farcaster/shared");
    let compared = 0;
    for (const lookup of lookups) {
      const page = await expectStatus(await reverse(lookup), 200);
      const wallets = page.body.data.map((r: { wallet: string }) => r.wallet);
      const batch = await expectStatus(
        await suite.server.request("/api/v1/batch", {
          method: "POST",
          key: suite.key,
          headers: { "Content-Type": "application/json" },
          body: JSON.stringify({ wallets }),
        }),
        200,
      );
      for (const row of page.body.data) {
        const single = await expectStatus(await suite.server.request(`/api/v1/wallet/${row.wallet}`, { key: suite.key }), 200);
        const batchRow = batch.body.data.find((b: { wallet: string } | null) => b?.wallet === row.wallet);
        assert.deepEqual(row, { ...batchRow, quality_score: single.body.data.quality.score }, lookup);
        compared++;
      }
    }
    assert.ok(compared >= lookups.length, `${compared} rows compared`);
  });

  test("a handle nobody holds: data [], total 0, nothing billed, 2 rate units", async () => {
    nextMinute();
    const { db } = get();
    const billed = await debitedTotal(db, suite.accountId);
    const page = await expectStatus(await reverse("twitter/nobody_here"), 200);
    assert.deepEqual(page.body, {
      data: [],
      meta: { handle: "nobody_here", total_count: 0, returned_count: 0, truncated: false, next_cursor: null },
    });
    assert.equal(await debitedTotal(db, suite.accountId), billed);
    assert.equal((await rateWindowOf(db, suite.accountId))!.minute_used, 2, "rate weight 2");
    assert.equal(rateHeaders(page).remaining, 300 - 2);
  });

  test("a cursor issued for one handle is refused on another, and across directions", async () => {
    nextMinute();
    const first = await expectStatus(await reverse("twitter/crowd"), 200);
    const cursor = first.body.meta.next_cursor;
    const other = await expectStatus(await reverse("twitter/alice", { cursor }), 400);
    assertErrorBody(other, "INVALID_CURSOR");
    const across = await expectStatus(await reverse("farcaster/crowd", { cursor }), 400);
    assertErrorBody(across, "INVALID_CURSOR");
    // the same handle written differently is the same lookup
    await expectStatus(await reverse("twitter/@CROWD", { cursor }), 200);
  });

  test("the signing secret is generated once and kept in the database: another process on it accepts the cursor", async () => {
    nextMinute();
    const { db } = get();
    const first = await expectStatus(await reverse("twitter/crowd"), 200);
    const [stored] = await db.query<{ n: number }>("SELECT count(*)::integer AS n FROM server_secrets");
    assert.equal(stored.n, 1);
    const second = await startServer(db, { clock });
    try {
      const page = await expectStatus(
        await second.request(`/api/v1/reverse/twitter/crowd?cursor=${encodeURIComponent(first.body.meta.next_cursor)}`, { key: suite.key }),
        200,
      );
      assert.equal(page.body.data[0].wallet, expectedCrowdOrder()[100]);
    } finally {
      await second.close();
    }
  });

  test("a modified or foreign cursor is 400 INVALID_CURSOR, never page one, and costs nothing", async () => {
    nextMinute();
    const { db } = get();
    const first = await expectStatus(await reverse("twitter/crowd"), 200);
    const cursor: string = first.body.meta.next_cursor;
    const [version, body, mac] = cursor.split(".");
    const flip = (s: string, i: number) => s.slice(0, i) + (s[i] === "A" ? "B" : "A") + s.slice(i + 1);
    const decoded = JSON.parse(Buffer.from(body, "base64url").toString());
    const moved = Buffer.from(JSON.stringify({ ...decoded, r: decoded.r - 10 })).toString("base64url");

    const foreign = await startServer(db, { clock, env: { CURSOR_SECRET: "another-server-secret-of-32-chars!!" } });
    const foreignCursor = (await expectStatus(await foreign.request("/api/v1/reverse/twitter/crowd", { key: suite.key }), 200)).body.meta.next_cursor;
    await foreign.close();

    nextMinute();
    const billed = await debitedTotal(db, suite.accountId);
    const windowBefore = await rateWindowOf(db, suite.accountId);
    const bad = [
      `${version}.${flip(body, 3)}.${mac}`,
      `${version}.${moved}.${mac}`,
      `${version}.${body}.${flip(mac, 5)}`,
      `${version}.${body}`,
      `c9.${body}.${mac}`,
      "",
      "page2",
      "eyJrIjoidHdpdHRlciJ9",
      foreignCursor,
    ];
    for (const candidate of bad) {
      const res = await expectStatus(await reverse("twitter/crowd", { cursor: candidate }), 400, candidate);
      assertErrorBody(res, "INVALID_CURSOR");
      rateHeaders(res);
    }
    assert.equal(await debitedTotal(db, suite.accountId), billed, "refused cursors bill nothing");
    assert.deepEqual(await rateWindowOf(db, suite.accountId), windowBefore, "and spend no rate units");
  });

  test("INVALID_HANDLE and INVALID_USERNAME name the expected form; refused free, with rate-limit headers", async () => {
    nextMinute();
    const windowBefore = await rateWindowOf(get().db, suite.accountId);
    for (const handle of ["sixteen_chars_xx", "bad-handle", "@@alice", "al ice", "%E2%9C%93"]) {
      const res = await expectStatus(await reverse(`twitter/${handle}`), 400, handle);
      assertErrorBody(res, "INVALID_HANDLE");
      assert.match(res.body.error, /1 to 15 alphanumeric characters or underscores/);
      rateHeaders(res);
    }
    for (const username of ["-alice", ".alice", "a".repeat(33), "under_score", "al%20ice"]) {
      const res = await expectStatus(await reverse(`farcaster/${username}`), 400, username);
      assertErrorBody(res, "INVALID_USERNAME");
      rateHeaders(res);
    }
    assert.deepEqual(await rateWindowOf(get().db, suite.accountId), windowBefore);
    // the longest valid forms are accepted
    await expectStatus(await reverse(`twitter/${"a".repeat(15)}`), 200);
    const ens = await expectStatus(await reverse(`farcaster/${"b".repeat(28)}.eth`), 200);
    assert.equal(ens.body.meta.username, `${"b".repeat(28)}.eth`);
  });

  test("reverse farcaster returns only wallets whose every source is attested, in the total and the page", async () => {
    nextMinute();
    const page = await expectStatus(await reverse("farcaster/SHARED"), 200);
    assert.equal(page.body.meta.username, "shared");
    assert.equal(page.body.meta.total_count, 2);
    assert.deepEqual(
      page.body.data.map((r: { wallet: string }) => r.wallet),
      [S.verifiedOnly, S.fullyAttested],
    );
    for (const row of page.body.data) {
      assert.deepEqual(row.farcaster, { username: "shared", url: "https://farcaster.xyz/shared", followers: 42, fid: 500, verified: true });
      assert.ok(!row.sources.includes("aggregated"));
    }
    // the same wallets by twitter: the correlated one is there (twitter returns every holder)
    const maybe = await expectStatus(await reverse("twitter/maybe_shared"), 200);
    assert.deepEqual(maybe.body.data.map((r: { wallet: string }) => r.wallet), [S.besideCorrelation]);
  });

  test("a new follower count or a new link re-ranks and re-filters at once", async () => {
    nextMinute();
    const { db } = get();
    const at = clock.now().toISOString();
    // crowd wallet 5 had no farcaster: give it the most followers of all
    await importIndex(db, [
      { wallet: address(5, "c"), kind: "farcaster", route: "farcaster-verification", fid: 99_999, username: "topcaster", followers: 1_000_000, observed_at: at },
    ], clock.now());
    const first = await expectStatus(await reverse("twitter/crowd"), 200);
    assert.equal(first.body.data[0].wallet, address(5, "c"));
    assert.equal(first.body.data[0].farcaster.followers, 1_000_000);

    // a correlation appears beside a fully attested wallet: it leaves reverse farcaster
    await importIndex(db, [{ wallet: S.fullyAttested, kind: "lens", route: "correlation", handle: "shared.lens", observed_at: at }], clock.now());
    const shared = await expectStatus(await reverse("farcaster/shared"), 200);
    assert.deepEqual(shared.body.data.map((r: { wallet: string }) => r.wallet), [S.verifiedOnly]);
    assert.equal(shared.body.meta.total_count, 1);

    // the account is renamed: the old username finds nobody, the new one finds the wallet
    await importIndex(db, [
      { wallet: S.verifiedOnly, kind: "farcaster", route: "farcaster-verification", fid: 500, username: "renamed", followers: 42, observed_at: at },
    ], new Date(clock.now().getTime() + 1000));
    assert.equal((await expectStatus(await reverse("farcaster/shared"), 200)).body.meta.total_count, 0);
    assert.equal((await expectStatus(await reverse("farcaster/renamed"), 200)).body.meta.total_count, 1);
  });

  test("a key bought without an account gets 403 ACCOUNT_REQUIRED on reverse farcaster, before any metering", async () => {
    nextMinute();
    const { db } = get();
    const bought = await createCustomer(db, { hasAccount: false, packs: [{ pack: "Agent" }], now: clock.now() });
    const res = await expectStatus(await reverse("farcaster/renamed", { key: bought.apiKey }), 403);
    assertErrorBody(res, "ACCOUNT_REQUIRED");
    assertNoRateHeaders(res);
    assert.deepEqual(await debitsOf(db, bought.accountId), []);
    assert.equal(await rateWindowOf(db, bought.accountId), undefined);
    // reverse twitter does not need an account
    const twitter = await expectStatus(await reverse("twitter/alice", { key: bought.apiKey }), 200);
    assert.equal(twitter.body.data.length, 1);
    assert.equal(await debitedTotal(db, bought.accountId), 1);
  });

  test("at zero balance: 402 NO_CREDITS; without a key: 401 and no rate-limit headers", async () => {
    nextMinute();
    const { db } = get();
    const broke = await createCustomer(db, { now: clock.now() });
    const res = await expectStatus(await reverse("twitter/alice", { key: broke.apiKey }), 402);
    assertErrorBody(res, "NO_CREDITS");
    assert.deepEqual(await debitsOf(db, broke.accountId), []);

    const anonymous = await expectStatus(await suite.server.request("/api/v1/reverse/twitter/alice"), 401);
    assertErrorBody(anonymous, "UNAUTHORIZED");
    assertNoRateHeaders(anonymous);
    const wrongKey = await expectStatus(await reverse("farcaster/renamed", { key: `wid_live_${"x".repeat(32)}` }), 401);
    assertErrorBody(wrongKey, "UNAUTHORIZED");
  });

  test("a page may overdraw the last credits; the next call is refused", async () => {
    nextMinute();
    const { db } = get();
    const small = await createCustomer(db, { packs: [{ pack: "Agent" }], now: clock.now() });
    const page = await expectStatus(await reverse("twitter/crowd", { key: small.apiKey }), 200);
    assert.equal(page.body.data.length, 100);
    assert.equal(await debitedTotal(db, small.accountId), 100, "checked before, not reserved: the page finishes");
    assertErrorBody(await expectStatus(await reverse("twitter/crowd", { key: small.apiKey, cursor: page.body.meta.next_cursor }), 402), "NO_CREDITS");
  });

  test("rate weight 2: one unit left in the minute refuses a page with 429 and bills nothing", async () => {
    nextMinute();
    const { db } = get();
    const developer = await createCustomer(db, { packs: [{ pack: "Agent" }], now: clock.now() });
    const now = clock.now();
    const minute = new Date(now.getTime() - (now.getTime() % 60_000)).toISOString();
    const day = `${minute.slice(0, 10)}T00:00:00.000Z`;
    const month = `${minute.slice(0, 7)}-01T00:00:00.000Z`;
    await setRateWindow(db, developer.accountId, { minuteStart: minute, minuteUsed: 59, dayStart: day, dayUsed: 59, monthStart: month, monthUsed: 59 });
    const res = await expectStatus(await reverse("twitter/alice", { key: developer.apiKey }), 429);
    assertErrorBody(res, "RATE_LIMITED");
    assert.ok(Number(res.headers.get("retry-after")) >= 1);
    assert.deepEqual(await debitsOf(db, developer.accountId), []);
    // the last unit still serves a single lookup (weight 1)
    await expectStatus(await suite.server.request(`/api/v1/wallet/${W.full}`, { key: developer.apiKey }), 200);
  });

  test("wrong method is 405", async () => {
    const res = await expectStatus(await suite.server.request("/api/v1/reverse/twitter/alice", { method: "POST", key: suite.key }), 405);
    assertErrorBody(res, "METHOD_NOT_ALLOWED");
  });
});
