// Filling the index from a Farcaster hub, against a fake hub on 127.0.0.1 speaking the hub's HTTP
// API: the backfill of every shard with page tokens, the follower's adds, removes, revokes, prunes
// and username changes as lookups and reverse pages see them, events during the backfill, retries
// on 429 and 500, and the lease that keeps the sync to one process.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { eachDatabase } from "../support/db.ts";
import { createCustomer, startServer, json, type TestServer } from "../support/server.ts";
import { address } from "../support/http.ts";
import { loopbackOutbound } from "../support/outbound.ts";
import { startFakeHub, type FakeHub } from "../support/fake-hub.ts";
import { runHubSync, startHubSync, type HubSyncOptions } from "../../src/hub/sync.ts";
import { readSync } from "../../src/hub/store.ts";
import { retryAfterMs } from "../../src/hub/client.ts";
import type { Db } from "../../src/db/types.ts";

/** fid f's k-th verified address. */
const wallet = (fid: number, k: number) => address(fid * 10 + k, "f");

/** The seeded hub: fids 1 to 12 over 2 shards, 1 to 3 addresses each; fid 11 has no username, fid 12 too many followers to count. */
function seed(hub: FakeHub): void {
  for (let fid = 1; fid <= 12; fid++) {
    const n = (fid % 3) + 1;
    hub.seed(fid, {
      username: fid === 11 ? undefined : `user${fid}`,
      addresses: Array.from({ length: n }, (_, k) => wallet(fid, k)),
      followers: fid === 12 ? 50 : fid * 2,
    });
  }
  // history before anyone listens: the backfill's start is found by paging it to its end
  for (let i = 0; i < 12; i++) hub.addCast(1);
}

async function count(db: Db, statement: string, params: unknown[] = []): Promise<number> {
  return Number((await db.query<{ n: number }>(statement, params))[0].n);
}

eachDatabase("hub sync", (get) => {
  let hub: FakeHub;
  let server: TestServer;
  let key: string;
  const logs: string[] = [];
  const options = (): HubSyncOptions => ({
    db: get().db,
    hubUrl: hub.url,
    now: server.clock.now,
    log: (line) => void logs.push(line),
    fidsPageSize: 3,
    followersLimit: 20,
    pollMs: 20,
    backoffMs: 5,
  });

  /** Follows until every event the hub holds is applied, then stops. */
  async function followToHead(): Promise<void> {
    const stop = new AbortController();
    const running = runHubSync({ ...options(), signal: stop.signal, backfill: "once", follow: true });
    const deadline = Date.now() + 20_000;
    try {
      while ((await readSync(get().db)).lastEventId !== hub.headEventId) {
        assert.ok(Date.now() < deadline, `the follower did not reach event ${hub.headEventId}`);
        await new Promise((r) => setTimeout(r, 20));
      }
    } finally {
      stop.abort();
    }
    assert.equal((await running).status, "stopped");
  }

  const lookup = async (w: string) => {
    const res = await server.request(`/api/v1/wallet/${w}`, { key });
    assert.equal(res.status, 200);
    const body = await json(res);
    if (process.env.SHOW_LOOKUP) console.error(JSON.stringify(body));
    return body;
  };
  const reverse = async (username: string) => {
    const res = await server.request(`/api/v1/reverse/farcaster/${username}`, { key });
    const body = await json(res);
    return res.status === 200 ? (body.data as Array<{ wallet: string }>).map((r) => r.wallet).sort() : [];
  };

  before(async () => {
    hub = await startFakeHub({ numShards: 2, fidsPageSize: 3, eventsPageSize: 5 });
    seed(hub);
    // an outbound so that a webhook endpoint can be registered for the watchlist test
    server = await startServer(get().db, { app: { outbound: loopbackOutbound() } });
    ({ apiKey: key } = await createCustomer(get().db, { packs: [{ pack: "Agent", quantity: 20 }], now: server.clock.now() }));
  });
  after(async () => {
    await server.close();
    await hub.close();
  });

  test("a backfill reads every fid of both shards page by page and lands in lookups and reverse pages", async () => {
    const outcome = await runHubSync({ ...options(), backfill: "always", follow: false });
    assert.equal(outcome.status, "done");
    assert.ok(outcome.status === "done");
    const withName = Array.from({ length: 12 }, (_, i) => i + 1).filter((f) => f !== 11);
    const addresses = withName.reduce((n, fid) => n + (fid % 3) + 1, 0);
    assert.deepEqual(outcome.result, { fids: 12, addresses, observations: addresses, last_event_id: hub.headEventId.toString() });
    // 6 fids a shard in pages of 3: each shard's second page was asked for with its token
    assert.equal(hub.requests.get("/v1/fids"), 4);
    const shards = await get().db.query<{ shard: number; done: boolean; fids_done: string }>("SELECT shard, done, fids_done::text FROM hub_shards ORDER BY shard");
    assert.deepEqual(shards.map((s) => [s.shard, s.done, s.fids_done]), [[1, true, "6"], [2, true, "6"]]);

    const record = (await lookup(wallet(5, 1))).data;
    assert.deepEqual(record.farcaster, { username: "user5", url: "https://farcaster.xyz/user5", followers: 10, fid: 5, verified: true });
    assert.ok(record.sources.includes("farcaster"));
    assert.equal((await lookup(wallet(12, 0))).data.farcaster.followers, undefined, "50 followers do not fit one page of 20: not counted");
    assert.equal((await lookup(wallet(11, 0))).meta.found, false, "an fid without a username is not written");
    assert.deepEqual(await reverse("user5"), [wallet(5, 0), wallet(5, 1), wallet(5, 2)].sort());

    // run again: resumes nothing, writes nothing new
    const links = await count(get().db, "SELECT count(*)::int AS n FROM links");
    const again = await runHubSync({ ...options(), backfill: "always", follow: false });
    assert.equal(again.status, "done");
    assert.equal(await count(get().db, "SELECT count(*)::int AS n FROM links"), links);
    assert.equal(links, addresses);

    // /metrics: the backfill's progress and the follower's place
    const metrics = await (await server.request("/metrics")).text();
    assert.match(metrics, /^walletid_hub_backfill_shards_done 2$/m);
    assert.match(metrics, /^walletid_hub_backfill_shards 2$/m);
    assert.match(metrics, /^walletid_hub_backfill_fids 12$/m);
    assert.match(metrics, /^walletid_hub_backfill_done 1$/m);
    assert.match(metrics, new RegExp(`^walletid_hub_last_event_id ${hub.headEventId}$`, "m"));
    assert.match(metrics, /^walletid_hub_events_behind 0$/m);
  });

  test("removed, revoked and pruned verifications leave lookups and reverse pages; adds arrive, old and new body", async () => {
    hub.removeVerification(5, wallet(5, 1));
    hub.dropVerification(7, wallet(7, 0), "revoke");
    hub.dropVerification(8, wallet(8, 2), "prune");
    hub.addVerification(9, wallet(9, 5), { newBody: true });
    hub.addVerification(10, wallet(10, 6));
    await followToHead();
    // the wallet's one identity is gone: answered as a wallet with nothing attached
    const removed = await lookup(wallet(5, 1));
    assert.equal(removed.meta.found, false);
    assert.equal(removed.data, null);
    assert.deepEqual(await reverse("user5"), [wallet(5, 0), wallet(5, 2)].sort());
    assert.equal((await lookup(wallet(7, 0))).data, null);
    assert.equal((await lookup(wallet(8, 2))).data, null);
    assert.deepEqual(await reverse("user7"), [wallet(7, 1)]);
    assert.equal((await lookup(wallet(9, 5))).data.farcaster.username, "user9");
    assert.ok((await reverse("user10")).includes(wallet(10, 6)));
    assert.equal(await count(get().db, "SELECT count(*)::int AS n FROM links WHERE wallet = $1", [wallet(5, 1)]), 0);
  });

  test("a username change moves the farcaster reverse lookup and the record", async () => {
    hub.setUsername(4, "renamed4");
    // an fid the index never saw: its username brings its verifications from the hub
    hub.seed(40, { addresses: [wallet(40, 0)] });
    hub.setUsername(40, "newcomer");
    await followToHead();
    assert.deepEqual(await reverse("user4"), []);
    assert.deepEqual(await reverse("renamed4"), [wallet(4, 0), wallet(4, 1)].sort());
    assert.equal((await lookup(wallet(4, 1))).data.farcaster.username, "renamed4");
    assert.deepEqual(await reverse("newcomer"), [wallet(40, 0)]);
  });

  test("events during a backfill are applied by the follower: no gap", async () => {
    let fired = false;
    hub.onRequest = (path, query) => {
      // shard 1's second page: its first (fids 2, 4, 6) is written already
      if (fired || path !== "/v1/fids" || query.get("shard_id") !== "1" || !query.get("pageToken")) return;
      fired = true;
      hub.removeVerification(2, wallet(2, 0));
      hub.addVerification(4, wallet(4, 7));
      hub.setUsername(6, "six-late");
    };
    const outcome = await runHubSync({ ...options(), backfill: "always", follow: false });
    hub.onRequest = undefined;
    assert.ok(fired);
    assert.equal(outcome.status, "done");
    // the backfill saw the old state of fids 2, 4, 6
    assert.equal((await lookup(wallet(2, 0))).data.farcaster.username, "user2");
    await followToHead();
    assert.equal((await lookup(wallet(2, 0))).data, null);
    assert.equal((await lookup(wallet(4, 7))).data.farcaster.username, "renamed4");
    assert.deepEqual(await reverse("six-late"), [wallet(6, 0)]);
    assert.deepEqual(await reverse("user6"), []);
  });

  test("429 and 500 answers are retried; a hub that keeps failing fails the run with nothing half-written", async () => {
    hub.behave({ rateLimit: 3, fail: 0 });
    hub.addVerification(3, wallet(3, 8));
    await followToHead();
    hub.behave({ fail: 3 });
    hub.addVerification(3, wallet(3, 9));
    await followToHead();
    assert.equal((await lookup(wallet(3, 8))).data.farcaster.username, "user3");
    assert.equal((await lookup(wallet(3, 9))).data.farcaster.username, "user3");

    // Retry-After is waited for
    hub.behave({ rateLimit: 1, retryAfter: "1" });
    const started = Date.now();
    hub.addVerification(3, wallet(3, 4));
    await followToHead();
    assert.ok(Date.now() - started >= 900, "waited for Retry-After: 1");
    assert.equal(retryAfterMs("Wed, 21 Oct 2015 07:28:00 GMT", Date.parse("Wed, 21 Oct 2015 07:27:58 GMT")), 2000);

    const before = (await readSync(get().db)).lastEventId;
    hub.behave({ fail: Infinity });
    hub.addVerification(3, wallet(3, 3));
    const failed = runHubSync({ ...options(), retries: 2, backfill: "once", follow: true });
    await assert.rejects(failed, /the hub answered 500 to \/v1\/events \(after 3 attempts\)/);
    hub.behave({});
    assert.equal((await readSync(get().db)).lastEventId, before);
    assert.equal((await readSync(get().db)).holder, null, "the lease is released");
    await followToHead();
    assert.equal((await lookup(wallet(3, 3))).data.farcaster.username, "user3");
  });

  test("two syncs on one database: one holds the lease and follows, the other waits and takes over when it stops", async () => {
    const logsA: string[] = [];
    const logsB: string[] = [];
    const stopA = startHubSync({ ...options(), leaseMs: 1000, retryMs: 50, log: (l) => void logsA.push(l) });
    await waitFor(async () => (await readSync(get().db)).holder !== null);
    const holderA = (await readSync(get().db)).holder;
    const stopB = startHubSync({ ...options(), leaseMs: 1000, retryMs: 50, log: (l) => void logsB.push(l) });
    await waitFor(() => logsB.some((l) => l.includes("another process is syncing")));
    hub.addVerification(1, wallet(1, 5));
    await waitFor(async () => (await readSync(get().db)).lastEventId === hub.headEventId);
    assert.equal((await readSync(get().db)).holder, holderA, "the first keeps the lease");
    await stopA();
    await waitFor(async () => {
      const s = await readSync(get().db);
      return s.holder !== null && s.holder !== holderA;
    });
    hub.addVerification(1, wallet(1, 6));
    await waitFor(async () => (await readSync(get().db)).lastEventId === hub.headEventId);
    await stopB();
    assert.equal((await lookup(wallet(1, 6))).data.farcaster.username, "user1");
    assert.equal((await readSync(get().db)).holder, null);
  });

  test("watched wallets: a hub removal and a username change each send one wallet.changed with cause hub", async () => {
    const registered = await server.request("/api/v1/webhooks", {
      method: "POST",
      key,
      body: JSON.stringify({ url: "http://127.0.0.1:9/hook", events: ["wallet.changed"] }),
    });
    assert.equal(registered.status, 201);
    const watched = await server.request("/api/v1/watchlist", { method: "POST", key, body: JSON.stringify({ wallets: [wallet(12, 0), wallet(9, 0)] }) });
    assert.ok(watched.ok, await watched.clone().text());
    hub.removeVerification(12, wallet(12, 0));
    hub.setUsername(9, "nine-renamed");
    await followToHead();
    const events = await get().db.query<{ body: string }>("SELECT body FROM webhook_events WHERE type = 'wallet.changed' ORDER BY created_at");
    const data = events.map((e) => JSON.parse(e.body).data);
    const removed = data.filter((d) => d.wallet === wallet(12, 0));
    assert.equal(removed.length, 1, JSON.stringify(data));
    assert.equal(removed[0].cause, "hub");
    assert.deepEqual(removed[0].changes.find((c: { field: string }) => c.field === "farcaster"), { field: "farcaster", before: "user12", after: null });
    assert.equal(removed[0].record, null);
    const renamed = data.filter((d) => d.wallet === wallet(9, 0));
    assert.equal(renamed.length, 1, JSON.stringify(data));
    assert.equal(renamed[0].cause, "hub");
    assert.deepEqual(renamed[0].changes.find((c: { field: string }) => c.field === "farcaster"), { field: "farcaster", before: "user9", after: "nine-renamed" });
    assert.equal(renamed[0].record.farcaster.username, "nine-renamed");
  });
});

async function waitFor(check: () => boolean | Promise<boolean>, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error("condition not reached in time");
    await new Promise((r) => setTimeout(r, 20));
  }
}
