// Several delivery loops on one database (on PostgreSQL each with its own pool, as two processes
// would be) share the deliveries: 200 events, each received exactly once, never one attempt twice.
// And a receiver's slot is freed once it has answered, not once the outcome is written.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { Webhook } from "standardwebhooks";
import { openDatabase } from "../../src/db/open.ts";
import type { Db } from "../../src/db/types.ts";
import { createDeliverer } from "../../src/webhooks/deliver.ts";
import { eachDatabase, slowStatement } from "../support/db.ts";
import { address, importIndex } from "../support/http.ts";
import { loopbackOutbound } from "../support/outbound.ts";
import { createClock, createCustomer, json, startServer, type TestServer } from "../support/server.ts";
import { startReceiver, type Receiver } from "./support.ts";

eachDatabase("two delivery loops", (get) => {
  const clock = createClock();
  const outbound = loopbackOutbound();
  let server: TestServer;
  let receiver: Receiver;
  let second: Db | undefined;

  before(async () => {
    server = await startServer(get().db, { clock, app: { outbound } });
    receiver = await startReceiver();
    if (get().url) second = await openDatabase({ databaseUrl: get().url, max: 4 });
  });
  after(async () => {
    await server.close();
    await receiver.close();
    await second?.close();
  });

  test("200 events under two loops: every one received once, each attempt sent once", async () => {
    const { apiKey } = await createCustomer(get().db, { packs: [{ pack: "Scale", quantity: 1 }], now: clock.now() });
    const res = await server.request("/api/v1/webhooks", { method: "POST", key: apiKey, body: JSON.stringify({ url: `${receiver.url}/both`, events: ["wallet.changed"] }) });
    const { secret } = (await json(res)).data;
    const wallets = Array.from({ length: 200 }, (_, i) => address(i, "2b"));
    assert.equal((await server.request("/api/v1/watchlist", { method: "POST", key: apiKey, body: JSON.stringify({ wallets }) })).status, 200);
    await importIndex(get().db, wallets.map((wallet, i) => ({ wallet, kind: "twitter", route: "x-signin", handle: `both${i}` })), clock.now());

    const loops = [get().db, second ?? get().db].map((db) =>
      createDeliverer({ db, config: server.config, outbound, now: clock.now, log: () => {}, idleMs: 20, concurrency: 16, perEndpoint: 16 }),
    );
    await Promise.all(loops.map((l) => l.start()));
    try {
      await receiver.waitFor(200, 60_000);
      // a while longer: anything sent twice would arrive now
      await new Promise((resolve) => setTimeout(resolve, 500));
    } finally {
      await Promise.all(loops.map((l) => l.stop()));
    }
    assert.equal(receiver.received.length, 200);
    const ids = new Set(receiver.received.map((r) => r.headers["webhook-id"]));
    assert.equal(ids.size, 200);
    const seen = new Set(receiver.received.map((r) => (new Webhook(secret).verify(r.raw, r.headers) as { data: { wallet: string } }).data.wallet));
    assert.deepEqual([...seen].sort(), [...wallets].sort());
    const [row] = await get().db.query<{ delivered: number; attempts: number }>(
      "SELECT count(*) FILTER (WHERE status = 'delivered')::integer AS delivered, sum(attempts)::integer AS attempts FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id WHERE e.url = $1",
      [`${receiver.url}/both`],
    );
    assert.deepEqual(row, { delivered: 200, attempts: 200 });
  });

  test("a receiver's slot is free once it has answered: the next attempt is sent while the outcome is still being written", async () => {
    // one request at a time to the endpoint, and every outcome write held for 1 s
    const slowOutcomes = slowStatement(get().db, "webhook_deliveries_finish", 1_000);
    const { apiKey } = await createCustomer(get().db, { packs: [{ pack: "Scale", quantity: 1 }], now: clock.now() });
    const res = await server.request("/api/v1/webhooks", { method: "POST", key: apiKey, body: JSON.stringify({ url: `${receiver.url}/one-at-a-time`, events: ["wallet.changed"] }) });
    assert.equal(res.status, 201);
    const wallets = Array.from({ length: 3 }, (_, i) => address(i, "3c"));
    assert.equal((await server.request("/api/v1/watchlist", { method: "POST", key: apiKey, body: JSON.stringify({ wallets }) })).status, 200);
    const before = receiver.received.length;
    await importIndex(get().db, wallets.map((wallet, i) => ({ wallet, kind: "twitter", route: "x-signin", handle: `slot${i}` })), clock.now());

    const loop = createDeliverer({ db: slowOutcomes, config: server.config, outbound, now: clock.now, log: () => {}, idleMs: 20, concurrency: 16, perEndpoint: 1 });
    await loop.start();
    try {
      await receiver.waitFor(before + 1, 10_000);
      const first = performance.now();
      await receiver.waitFor(before + 3, 10_000);
      // held until each outcome was written, the third would come 2 s after the first
      const spread = performance.now() - first;
      assert.ok(spread < 1_000, `the three attempts took ${spread.toFixed(0)} ms, one at a time`);
    } finally {
      await loop.stop();
    }
    assert.deepEqual(new Set(receiver.received.slice(before).map((r) => r.path)), new Set(["/one-at-a-time"]));
    const rows = await get().db.query<{ status: string }>(
      "SELECT d.status FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id WHERE e.url = $1",
      [`${receiver.url}/one-at-a-time`],
    );
    assert.deepEqual(rows.map((r) => r.status), ["delivered", "delivered", "delivered"]);
  });
});
