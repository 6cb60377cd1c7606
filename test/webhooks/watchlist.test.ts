// The watchlist (REST) and wallet.changed: events from an import, a job's live resolution and
// the reachability pass, one per wallet and cause, billed once under the event's id, withheld
// without credits; a change to an unwatched wallet, or a write that changes nothing, sends none.
import assert from "node:assert/strict";
import { after, before, beforeEach, test } from "node:test";
import { Webhook } from "standardwebhooks";
import { eachDatabase } from "../support/db.ts";
import { FAKE_X_TOKEN, startFakeX, type FakeX } from "../support/fake-x.ts";
import { address, debitsOf, importIndex } from "../support/http.ts";
import { loopbackOutbound } from "../support/outbound.ts";
import { createClock, createCustomer, json, startServer, type TestServer } from "../support/server.ts";
import { runTask, type MaintenanceDeps } from "../../src/maintenance/run.ts";
import type { LiveSource, ObservationFields } from "../../src/sources/types.ts";
import { deliverer, startReceiver, type Receiver } from "./support.ts";

let n = 0;
const fresh = () => address(++n, "5e");

eachDatabase("watchlist and wallet.changed", (get) => {
  const clock = createClock();
  const outbound = loopbackOutbound();
  const liveAnswers = new Map<string, ObservationFields[]>();
  const source: LiveSource = {
    name: "test-live",
    stage: "live",
    batchSize: 100,
    resolve: async (addresses) => new Map(addresses.filter((a) => liveAnswers.has(a)).map((a) => [a, liveAnswers.get(a)!])),
  };
  let server: TestServer;
  let receiver: Receiver;
  let x: FakeX;

  before(async () => {
    server = await startServer(get().db, { clock, app: { outbound, sources: [source] } });
    receiver = await startReceiver();
    x = await startFakeX();
  });
  after(async () => {
    await server.close();
    await receiver.close();
    await x.close();
  });
  beforeEach(async () => {
    receiver.received.length = 0;
    await get().db.query("UPDATE webhook_deliveries SET status = 'failed' WHERE status = 'pending'");
  });

  /** A customer with an endpoint for wallet.changed; `credits` false: no packs and no free allowance. */
  async function subscriber(credits = true) {
    const customer = await createCustomer(get().db, { packs: credits ? [{ pack: "Agent", quantity: 1 }] : [], now: clock.now() });
    const res = await server.request("/api/v1/webhooks", {
      method: "POST",
      key: customer.apiKey,
      body: JSON.stringify({ url: `${receiver.url}/${customer.accountId}`, events: ["wallet.changed"] }),
    });
    assert.equal(res.status, 201);
    return { ...customer, secret: (await json(res)).data.secret as string };
  }

  async function watch(key: string, wallets: unknown[]) {
    const res = await server.request("/api/v1/watchlist", { method: "POST", key, body: JSON.stringify({ wallets }) });
    return { status: res.status, headers: res.headers, body: await json(res) };
  }

  /** Delivers what is due; the verified bodies received, by account (the receiver path). */
  async function deliveredTo(accountId: string, secret: string): Promise<any[]> {
    await deliverer(get().db, server, outbound).runOnce();
    return receiver.received.filter((r) => r.path === `/${accountId}`).map((r) => new Webhook(secret).verify(r.raw, r.headers));
  }

  test("watch, page and unwatch: counts, limits per request, invalid addresses, one rate unit a request", async () => {
    const { apiKey } = await subscriber();
    const [a, b, c] = [fresh(), fresh(), fresh()];
    const first = await watch(apiKey, [a, b.toUpperCase().replace("0X", "0x"), a]);
    assert.equal(first.status, 200);
    assert.deepEqual(first.body.data, { added: 2, already_watched: 0, total: 2 });
    const remaining = Number(first.headers.get("x-ratelimit-remaining"));
    const second = await watch(apiKey, [b, c]);
    assert.deepEqual(second.body.data, { added: 1, already_watched: 1, total: 3 });
    assert.equal(Number(second.headers.get("x-ratelimit-remaining")), remaining - 1);

    const bad = await watch(apiKey, [a, "0x123"]);
    assert.equal(bad.status, 400);
    assert.equal(bad.body.code, "INVALID_ADDRESS");
    const tooMany = await watch(apiKey, Array.from({ length: 1001 }, (_, i) => address(i, "ab")));
    assert.equal(tooMany.status, 400);
    assert.equal(tooMany.body.code, "INVALID_REQUEST");
    const empty = await watch(apiKey, []);
    assert.equal(empty.status, 400);

    const page = await json(await server.request("/api/v1/watchlist", { key: apiKey }));
    assert.deepEqual(page.data.map((r: any) => r.wallet).sort(), [a, b, c].sort());
    assert.equal(page.meta.total, 3);
    assert.equal(page.meta.next_cursor, null);

    const removed = await server.request("/api/v1/watchlist", { method: "DELETE", key: apiKey, body: JSON.stringify({ wallets: [a, fresh()] }) });
    assert.deepEqual((await json(removed)).data, { removed: 1, total: 2 });
  });

  test("the watchlist pages by cursor and stops at 100,000 wallets, adding nothing past it", async () => {
    const { apiKey, accountId } = await subscriber();
    await get().db.query(
      "INSERT INTO watched_wallets (account_id, wallet, added_at) SELECT $1, '0x' || lpad(to_hex(i), 40, '0'), $2::timestamptz + make_interval(secs => i) FROM generate_series(1, 99999) AS i",
      [accountId, clock.now()],
    );
    const page1 = await json(await server.request("/api/v1/watchlist", { key: apiKey }));
    assert.equal(page1.data.length, 100);
    assert.equal(page1.meta.total, 99_999);
    const page2 = await json(await server.request(`/api/v1/watchlist?cursor=${page1.meta.next_cursor}`, { key: apiKey }));
    assert.equal(page2.data[0].wallet, `0x${(101).toString(16).padStart(40, "0")}`);

    const full = await watch(apiKey, [fresh(), fresh()]);
    assert.equal(full.status, 400);
    assert.equal(full.body.code, "WATCHLIST_FULL");
    assert.deepEqual((await watch(apiKey, [fresh()])).body.data, { added: 1, already_watched: 0, total: 100_000 });
    await get().db.query("DELETE FROM watched_wallets WHERE account_id = $1", [accountId]);
  });

  test("an import that changes a watched wallet sends one event with the changes, the record and the cause, billed once", async () => {
    const { apiKey, accountId, secret } = await subscriber();
    const w = fresh();
    const quiet = fresh();
    await importIndex(get().db, [{ wallet: w, kind: "ens", route: "ens-primary", name: "before.eth" }], clock.now());
    await watch(apiKey, [w]);
    clock.advance(1000);
    await importIndex(
      get().db,
      [
        { wallet: w, kind: "twitter", route: "x-signin", handle: "watched_one" },
        { wallet: w, kind: "github", route: "github-signin", username: "octo" },
        { wallet: quiet, kind: "twitter", route: "x-signin", handle: "nobody_watches" },
      ],
      clock.now(),
    );
    const events = await deliveredTo(accountId, secret);
    assert.equal(events.length, 1);
    const [event] = events;
    assert.equal(event.type, "wallet.changed");
    assert.equal(event.data.wallet, w);
    assert.equal(event.data.cause, "import");
    assert.deepEqual(event.data.changes, [
      { field: "twitter", before: null, after: "watched_one" },
      { field: "github", before: null, after: "octo" },
      { field: "sources", before: ["onchain"], after: ["onchain", "attested-social"] },
    ]);
    // the record as a lookup shows it now
    const lookup = await json(await server.request(`/api/v1/wallet/${w}`, { key: apiKey }));
    assert.deepEqual(event.data.record, lookup.data);

    const debits = (await debitsOf(get().db, accountId)).filter((d) => d.call_key.startsWith("event:"));
    const [row] = await get().db.query<{ id: string }>("SELECT id FROM webhook_events WHERE account_id = $1 AND type = 'wallet.changed'", [accountId]);
    assert.deepEqual(debits.map((d) => [d.call_key, d.matches]), [[`event:${row.id}`, 1]]);

    // the same lines again change nothing: no event, no debit
    receiver.received.length = 0;
    await importIndex(get().db, [{ wallet: w, kind: "twitter", route: "x-signin", handle: "watched_one" }], clock.now());
    assert.deepEqual(await deliveredTo(accountId, secret), []);
    assert.equal((await debitsOf(get().db, accountId)).filter((d) => d.call_key.startsWith("event:")).length, 1);
  });

  test("an account without credits gets the event withheld: field names only, no record, no debit", async () => {
    const { apiKey, accountId, secret } = await subscriber(false);
    const w = fresh();
    await watch(apiKey, [w]);
    await importIndex(get().db, [{ wallet: w, kind: "farcaster", route: "farcaster-verification", fid: 90_000 + n, username: `fc${n}` }], clock.now());
    const [event] = await deliveredTo(accountId, secret);
    assert.deepEqual(event.data, { wallet: w, changes: [{ field: "farcaster" }, { field: "sources" }], cause: "import", withheld: true });
    assert.deepEqual(await debitsOf(get().db, accountId), []);
  });

  test("credits for part of one import's events: pack then free allowance, one match each in wallet order, the rest withheld", async () => {
    const customer = await createCustomer(get().db, { email: `partial${n}@example.com`, packs: [{ pack: "Agent" }], now: clock.now() });
    const { accountId, apiKey } = customer;
    const res = await server.request("/api/v1/webhooks", {
      method: "POST",
      key: apiKey,
      body: JSON.stringify({ url: `${receiver.url}/${accountId}`, events: ["wallet.changed"] }),
    });
    const { secret } = (await json(res)).data;
    // 10 of the pack's 12 spent, 98 of the 100 free matches used this month
    await get().db.query("SELECT debit_matches($1, 'spent-before', 10, $2)", [accountId, clock.now()]);
    await get().db.query("INSERT INTO debits (account_id, call_key, part, source, matches, created_at) VALUES ($1, 'free-before', 0, 'free', 98, $2)", [accountId, clock.now()]);
    const wallets = Array.from({ length: 6 }, () => fresh()).sort();
    await watch(apiKey, wallets);
    await importIndex(get().db, wallets.map((wallet, i) => ({ wallet, kind: "twitter", route: "x-signin", handle: `partial_${n}_${i}` })), clock.now());

    const events = await deliveredTo(accountId, secret);
    const byWallet = new Map(events.map((e) => [e.data.wallet, e.data]));
    assert.deepEqual(wallets.map((w) => (byWallet.get(w).withheld ? "withheld" : byWallet.get(w).record.twitter.handle)), [
      ...wallets.slice(0, 4).map((_, i) => `partial_${n}_${i}`),
      "withheld",
      "withheld",
    ]);
    const rows = await get().db.query<{ id: string; wallet: string }>(
      "SELECT id, body::jsonb->'data'->>'wallet' AS wallet FROM webhook_events WHERE account_id = $1 AND type = 'wallet.changed'",
      [accountId],
    );
    const idOf = new Map(rows.map((r) => [r.wallet, r.id]));
    const debits = (await debitsOf(get().db, accountId)).filter((d) => d.call_key.startsWith("event:"));
    assert.deepEqual(
      debits.map((d) => [d.call_key, d.source, d.matches, d.drawn_after]).sort((a, b) => String(a[0]).localeCompare(String(b[0]))),
      [
        [`event:${idOf.get(wallets[0])}`, "pack", 1, 11],
        [`event:${idOf.get(wallets[1])}`, "pack", 1, 12],
        [`event:${idOf.get(wallets[2])}`, "free", 1, null],
        [`event:${idOf.get(wallets[3])}`, "free", 1, null],
      ].sort((a, b) => String(a[0]).localeCompare(String(b[0]))),
    );
    const [balance] = await get().db.query<{ available: number }>("SELECT available FROM account_credits($1, $2)", [accountId, clock.now()]);
    assert.equal(balance.available, 0);
  });

  test("an event whose record has neither twitter nor farcaster is free", async () => {
    const { apiKey, accountId, secret } = await subscriber();
    const w = fresh();
    await watch(apiKey, [w]);
    await importIndex(get().db, [{ wallet: w, kind: "ens", route: "ens-primary", name: `free${n}.eth` }], clock.now());
    const [event] = await deliveredTo(accountId, secret);
    assert.equal(event.data.record.ens_name, `free${n}.eth`);
    assert.deepEqual(await debitsOf(get().db, accountId), []);
  });

  test("a job's live resolution of a watched wallet sends its event with cause job", async () => {
    const { apiKey, accountId, secret } = await subscriber();
    const w = fresh();
    await watch(apiKey, [w]);
    liveAnswers.set(w, [{ kind: "twitter", route: "x-signin", handle: "found_live" }]);
    const res = await server.request("/api/v1/jobs", { method: "POST", key: apiKey, body: JSON.stringify({ wallets: [w, fresh()] }) });
    assert.equal((await json(res)).data.status, "completed");
    const events = await deliveredTo(accountId, secret);
    assert.equal(events.length, 1);
    assert.equal(events[0].data.cause, "job");
    assert.deepEqual(events[0].data.changes[0], { field: "twitter", before: null, after: "found_live" });
    assert.equal(events[0].data.record.twitter.handle, "found_live");
  });

  test("the reachability pass sends the watched wallets whose handle's reachability changed, cause maintenance", async () => {
    const { apiKey, accountId, secret } = await subscriber();
    const w = fresh();
    const handle = `reach${n}`;
    await importIndex(get().db, [{ wallet: w, kind: "twitter", route: "x-signin", handle, observed_at: "2026-11-01T00:00:00Z" }], clock.now());
    await watch(apiKey, [w]);
    x.suspend(handle);
    const deps: MaintenanceDeps = {
      db: get().db,
      now: clock.now,
      log: () => {},
      x: { baseUrl: x.url, bearerToken: FAKE_X_TOKEN },
      reachabilityDailyLimit: 10_000,
      sleep: async (ms) => clock.advance(ms),
    };
    const report = await runTask(deps, "reachability");
    assert.equal(report.status, "done");
    const events = await deliveredTo(accountId, secret);
    assert.equal(events.length, 1);
    assert.equal(events[0].data.cause, "maintenance");
    assert.deepEqual(events[0].data.changes, [{ field: "reachability", before: null, after: "suspended" }]);
    assert.equal(events[0].data.record.twitter.reachability, "suspended");
  });
});
