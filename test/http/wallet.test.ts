// GET /wallet/{address}: the record rules, lookup classes, staleness, billing and input errors.
import { test } from "node:test";
import assert from "node:assert/strict";
import { eachDatabase } from "../support/db.ts";
import { fixtureSuite, json } from "../support/server.ts";
import { W } from "../support/fixtures.ts";

eachDatabase("GET /wallet/{address}", (get) => {
  const suite = fixtureSuite(get);

  async function lookup(address: string) {
    const res = await suite.server.request(`/api/v1/wallet/${address}`, { key: suite.key });
    return { res, body: await json(res) };
  }

  async function debitedFor(callsBefore: number) {
    const rows = await get().db.query<{ n: number }>(
      "SELECT coalesce(sum(matches), 0)::integer AS n FROM debits WHERE account_id = $1",
      [suite.accountId],
    );
    return rows[0].n - callsBefore;
  }

  test("a fully attested wallet returns every identity with its evidence", async () => {
    const { res, body } = await lookup(W.full);
    assert.equal(res.status, 200, JSON.stringify(body));
    assert.deepEqual(body.data, {
      wallet: W.full,
      ens_name: "alice.eth",
      twitter: {
        handle: "alice",
        url: "https://x.com/alice",
        verified: true,
        reachable: true,
        reachability: "live",
        reachability_checked_at: "2026-11-18T12:00:30.000Z",
      },
      farcaster: { username: "alice", url: "https://farcaster.xyz/alice", followers: 100, fid: 3, verified: true },
      sources: ["onchain", "farcaster", "attested-social"],
      quality: { score: 90, last_verified: "2026-11-19T12:00:30.000Z" },
    });
    assert.deepEqual(body.meta, { wallet: W.full, found: true, last_updated: "2026-11-19T12:00:30.000Z", stale: false });
    assert.equal(res.headers.get("x-data-staleness"), null);
    assert.equal(res.headers.get("x-last-updated"), null);
  });

  test("an address in capitals is answered lowercased", async () => {
    const { res, body } = await lookup(W.full.toUpperCase().replace("0X", "0x"));
    assert.equal(res.status, 200);
    assert.equal(body.meta.wallet, W.full);
    assert.equal(body.data.wallet, W.full);
  });

  test("a handle resting only on the owner's own text is self_declared and not verified", async () => {
    const { body } = await lookup(W.selfDeclared);
    assert.deepEqual(body.data.twitter, { handle: "bob", url: "https://x.com/bob", verified: false, self_declared: true });
    assert.deepEqual(body.data.sources, ["onchain"]);
  });

  test("self_declared is omitted, not false, for an attested handle; reachability is omitted until checked", async () => {
    const { body } = await lookup(W.stale);
    assert.equal("self_declared" in body.data.twitter, false);
    assert.equal("reachable" in body.data.twitter, false);
    assert.equal("reachability" in body.data.twitter, false);
  });

  test("a second attested handle shows as also when both are live", async () => {
    const { body } = await lookup(W.twoHandles);
    assert.equal(body.data.twitter.handle, "carol");
    assert.deepEqual(body.data.twitter.also, { handle: "carol_alt", url: "https://x.com/carol_alt", source: "manual" });
  });

  test("a handle that no longer reaches anyone is replaced by the working one, without also", async () => {
    const { body } = await lookup(W.corrected);
    assert.equal(body.data.twitter.handle, "dave_new");
    assert.equal(body.data.twitter.reachability, "live");
    assert.equal("also" in body.data.twitter, false);
  });

  test("correlation alone is aggregated evidence, never verified", async () => {
    const { body } = await lookup(W.aggregated);
    assert.deepEqual(body.data.sources, ["aggregated"]);
    assert.equal(body.data.twitter.verified, false);
    assert.equal(body.data.quality.score, 35);
  });

  test("a route outside the allowlist yields no evidence class and no sources field", async () => {
    const { body } = await lookup(W.unclassified);
    assert.equal(body.data.twitter.handle, "leo");
    assert.equal("sources" in body.data, false);
    assert.equal(body.data.twitter.verified, false);
  });

  test("an agent shows its descriptor; it is declined beside an owner-attested human identity", async () => {
    const agent = await lookup(W.agent);
    assert.deepEqual(agent.body.data.agent, {
      is_agent: true,
      name: "TradeBot",
      framework: "eliza",
      type: "trading",
      token_symbol: "TBOT",
      verified: true,
    });
    const declined = await lookup(W.agentWithHuman);
    assert.equal(declined.body.data.twitter.handle, "kate_human");
    assert.equal("agent" in declined.body.data, false);
  });

  test("a stale record carries the staleness headers", async () => {
    const { res, body } = await lookup(W.stale);
    assert.equal(body.meta.stale, true);
    assert.equal(res.headers.get("x-data-staleness"), "stale");
    assert.equal(res.headers.get("x-last-updated"), "2026-08-22T12:00:30.000Z");
    assert.equal(body.meta.last_updated, "2026-08-22T12:00:30.000Z");
  });

  test("checked-empty and never-seen wallets are 200 with data null, told apart by checked_at", async () => {
    const empty = await lookup(W.empty);
    assert.equal(empty.res.status, 200);
    assert.deepEqual(empty.body, { data: null, meta: { wallet: W.empty, found: false, checked_at: "2026-11-16T12:00:30.000Z" } });
    const never = await lookup(W.neverSeen);
    assert.deepEqual(never.body, { data: null, meta: { wallet: W.neverSeen, found: false, checked_at: null } });
  });

  test("only twitter or farcaster matches are billed: one credit each, keyed on the call", async () => {
    const before = await debitedFor(0);
    await lookup(W.full);
    assert.equal(await debitedFor(before), 1, "twitter and farcaster wallet bills one");
    await lookup(W.farcasterOnly);
    assert.equal(await debitedFor(before), 2, "farcaster-only wallet bills one");
    await lookup(W.ensOnly);
    await lookup(W.empty);
    await lookup(W.neverSeen);
    assert.equal(await debitedFor(before), 2, "ens/lens/github-only, empty and unseen wallets are free");
    const keys = await get().db.query<{ call_key: string }>(
      "SELECT DISTINCT call_key FROM debits WHERE account_id = $1",
      [suite.accountId],
    );
    assert.equal(new Set(keys.map((k) => k.call_key)).size, keys.length);
  });

  test("an ens/lens/github-only record is returned in full for free", async () => {
    const { body } = await lookup(W.ensOnly);
    assert.equal(body.data.ens_name, "eve.eth");
    assert.equal(body.data.lens, "eve.lens");
    assert.equal(body.data.github, "eve");
    assert.equal("twitter" in body.data, false);
  });

  test("a malformed address is 400 INVALID_ADDRESS with rate-limit headers, costing nothing", async () => {
    const before = await debitedFor(0);
    const ok = await suite.server.request(`/api/v1/wallet/${W.neverSeen}`, { key: suite.key });
    const remaining = Number(ok.headers.get("x-ratelimit-remaining"));
    const res = await suite.server.request("/api/v1/wallet/0x1234", { key: suite.key });
    const body = await json(res);
    assert.equal(res.status, 400);
    assert.equal(body.code, "INVALID_ADDRESS");
    assert.match(body.error, /0x followed by 40 hex characters/);
    assert.equal(res.headers.get("x-ratelimit-limit"), "60");
    assert.equal(Number(res.headers.get("x-ratelimit-remaining")), remaining, "no rate unit spent");
    assert.equal(await debitedFor(before), 0);
  });

  test("no key or a wrong key is 401 without rate-limit headers", async () => {
    const none = await suite.server.request(`/api/v1/wallet/${W.full}`);
    assert.equal(none.status, 401);
    assert.equal((await json(none)).code, "UNAUTHORIZED");
    assert.equal(none.headers.get("x-ratelimit-limit"), null);
    const wrong = await suite.server.request(`/api/v1/wallet/${W.full}`, { key: `wid_live_${"x".repeat(32)}` });
    assert.equal(wrong.status, 401);
  });
});
