// Webhook endpoints and deliveries through a real server and a real receiver: registration
// rules, Standard Webhooks signatures checked with the `standardwebhooks` package over the raw
// bytes, retries under one webhook-id, 3xx and 410, rotation, redelivery and the delivery log.
import assert from "node:assert/strict";
import { after, before, beforeEach, describe, test } from "node:test";
import { Webhook } from "standardwebhooks";
import { eachDatabase } from "../support/db.ts";
import { address } from "../support/http.ts";
import { loopbackOutbound } from "../support/outbound.ts";
import { createClock, createCustomer, json, startServer, type TestServer } from "../support/server.ts";
import { OutboundError, type Outbound } from "../../src/http/outbound.ts";
import { deliverer, deliveryRows, startReceiver, type Receiver } from "./support.ts";

let tag = 0;

/** Submits a one-wallet job (it runs inline): its job.completed event is what gets delivered. */
async function completeJob(server: TestServer, key: string): Promise<string> {
  const res = await server.request("/api/v1/jobs", { method: "POST", key, body: JSON.stringify({ wallets: [address(++tag, "77")] }) });
  const body = await json(res);
  assert.equal(body.data.status, "completed", JSON.stringify(body));
  return body.data.job_id;
}

async function register(server: TestServer, key: string, body: object): Promise<{ status: number; body: any }> {
  const res = await server.request("/api/v1/webhooks", { method: "POST", key, body: JSON.stringify(body) });
  return { status: res.status, body: res.status === 204 ? null : await json(res) };
}

eachDatabase("webhooks", (get) => {
  const clock = createClock();
  const outbound = loopbackOutbound();
  let server: TestServer;
  let receiver: Receiver;

  before(async () => {
    server = await startServer(get().db, { clock, app: { outbound }, env: { WEBHOOK_RETRY_SCHEDULE: "0s,5s,5m" } });
    receiver = await startReceiver();
  });
  after(async () => {
    await server.close();
    await receiver.close();
  });
  beforeEach(async () => {
    receiver.received.length = 0;
    receiver.answers.length = 0;
    // each test delivers its own events only: what earlier tests left pending is ended
    await get().db.query("UPDATE webhook_deliveries SET status = 'failed' WHERE status = 'pending'");
  });

  async function customer() {
    return await createCustomer(get().db, { packs: [{ pack: "Agent", quantity: 5 }], now: clock.now() });
  }

  test("registration answers the secret once, lists without it, refuses bad URLs and event types, and stops at 5", async () => {
    const { apiKey } = await customer();
    const created = await register(server, apiKey, { url: `${receiver.url}/hook` });
    assert.equal(created.status, 201);
    assert.match(created.body.data.secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
    assert.equal(Buffer.from(created.body.data.secret.slice(6), "base64").length, 32);
    assert.deepEqual(created.body.data.events, ["job.completed", "job.failed", "wallet.changed"]);
    assert.equal(created.body.data.enabled, true);

    const listed = await json(await server.request("/api/v1/webhooks", { key: apiKey }));
    assert.deepEqual(listed.data, [{ id: created.body.data.id, url: `${receiver.url}/hook`, events: created.body.data.events, enabled: true, created_at: created.body.data.created_at }]);
    // the secret is stored sealed, not as sent
    const [row] = await get().db.query<{ secret_enc: string }>("SELECT secret_enc FROM webhook_endpoints WHERE id = $1", [created.body.data.id]);
    assert.ok(!row.secret_enc.includes(created.body.data.secret.slice(6)));

    const unknownType = await register(server, apiKey, { url: `${receiver.url}/x`, events: ["job.completed", "wallet.deleted"] });
    assert.equal(unknownType.status, 400);
    assert.equal(unknownType.body.code, "INVALID_PARAMETER");
    for (const url of ["https://10.0.0.1/hook", "ftp://127.0.0.1/x", "https://user:pw@127.0.0.1/x", "not a url", "https://169.254.169.254/latest"]) {
      const refused = await register(server, apiKey, { url });
      assert.equal(refused.status, 400, url);
      assert.equal(refused.body.code, "INVALID_WEBHOOK_URL", url);
    }
    for (let i = 2; i <= 5; i++) assert.equal((await register(server, apiKey, { url: `${receiver.url}/${i}`, events: ["job.failed"] })).status, 201);
    const sixth = await register(server, apiKey, { url: `${receiver.url}/6` });
    assert.equal(sixth.status, 409);
    assert.equal(sixth.body.code, "WEBHOOK_LIMIT");

    const deleted = await server.request(`/api/v1/webhooks/${created.body.data.id}`, { method: "DELETE", key: apiKey });
    assert.equal(deleted.status, 204);
    assert.equal((await server.request(`/api/v1/webhooks/${created.body.data.id}`, { method: "DELETE", key: apiKey })).status, 404);
    assert.equal((await json(await server.request("/api/v1/webhooks", { key: apiKey }))).data.length, 4);
    assert.equal((await register(server, apiKey, { url: `${receiver.url}/6` })).status, 201);
  });

  test("without an outbound module, registration is 503 with Retry-After", async () => {
    const bare = await startServer(get().db, { clock });
    try {
      const { apiKey } = await customer();
      const res = await bare.request("/api/v1/webhooks", { method: "POST", key: apiKey, body: JSON.stringify({ url: `${receiver.url}/hook` }) });
      assert.equal(res.status, 503);
      assert.equal(res.headers.get("retry-after"), "60");
      assert.equal((await json(res)).code, "SERVICE_UNAVAILABLE");
    } finally {
      await bare.close();
    }
  });

  test("a job.completed event is signed as Standard Webhooks and verifies over the raw bytes", async () => {
    const { apiKey, accountId } = await customer();
    const { body } = await register(server, apiKey, { url: `${receiver.url}/jobs`, events: ["job.completed"] });
    const jobId = await completeJob(server, apiKey);
    const loop = deliverer(get().db, server, outbound);
    assert.equal(await loop.runOnce(), 1);
    assert.equal(receiver.received.length, 1);
    const [got] = receiver.received;
    assert.equal(got.path, "/jobs");
    assert.equal(got.headers["content-type"], "application/json");
    const verified = new Webhook(body.data.secret).verify(got.raw, got.headers) as any;
    assert.equal(verified.type, "job.completed");
    assert.deepEqual(Object.keys(verified.data).sort(), ["billed_matches", "completed_at", "created_at", "job_id", "matched", "processed", "results_url", "status", "total"]);
    assert.equal(verified.data.job_id, jobId);
    assert.equal(verified.data.status, "completed");
    assert.equal(verified.data.total, 1);
    assert.equal(verified.data.results_url, `${server.config.publicUrl}/api/v1/jobs/${jobId}`);
    const [event] = await get().db.query<{ id: string; account_id: string }>("SELECT id, account_id FROM webhook_events WHERE body LIKE $1", [`%${jobId}%`]);
    assert.equal(got.headers["webhook-id"], event.id);
    assert.equal(event.account_id, accountId);
    // another secret does not verify it
    assert.throws(() => new Webhook(`whsec_${Buffer.alloc(32, 1).toString("base64")}`).verify(got.raw, got.headers));
    const [delivery] = await deliveryRows(get().db, body.data.id);
    assert.deepEqual({ status: delivery.status, attempts: delivery.attempts, code: delivery.last_status_code }, { status: "delivered", attempts: 1, code: 200 });
    // nothing more to send
    assert.equal(await loop.runOnce(), 0);
  });

  test("a failed attempt is retried on the schedule with the same webhook-id, and logged with the endpoint id only", async () => {
    const { apiKey } = await customer();
    const { body } = await register(server, apiKey, { url: `${receiver.url}/flaky`, events: ["job.completed"] });
    await completeJob(server, apiKey);
    const logs: string[] = [];
    const loop = deliverer(get().db, server, outbound, logs);
    receiver.answers.push(500, 503);
    assert.equal(await loop.runOnce(), 1);
    // the second attempt is due 5 s later
    assert.equal(await loop.runOnce(), 0);
    clock.advance(5_000);
    assert.equal(await loop.runOnce(), 1);
    clock.advance(5 * 60_000);
    assert.equal(await loop.runOnce(), 1);
    assert.equal(receiver.received.length, 3);
    const ids = new Set(receiver.received.map((r) => r.headers["webhook-id"]));
    assert.equal(ids.size, 1);
    for (const r of receiver.received) new Webhook(body.data.secret).verify(r.raw, r.headers);
    const [delivery] = await deliveryRows(get().db, body.data.id);
    assert.deepEqual({ status: delivery.status, attempts: delivery.attempts, code: delivery.last_status_code }, { status: "delivered", attempts: 3, code: 200 });
    assert.equal(logs.length, 2);
    for (const line of logs) {
      assert.match(line, new RegExp(`webhook endpoint ${body.data.id}: delivery ${delivery.id} attempt \\d failed \\(answered 50[03]\\)`));
      assert.ok(!line.includes(body.data.secret.slice(6)) && !line.includes("job_id"), line);
    }
  });

  test("the last attempt of the schedule that fails ends the delivery as failed", async () => {
    const { apiKey } = await customer();
    const { body } = await register(server, apiKey, { url: `${receiver.url}/down`, events: ["job.completed"] });
    await completeJob(server, apiKey);
    const loop = deliverer(get().db, server, outbound);
    receiver.answers.push(500, 500, 500, 500);
    await loop.runOnce();
    clock.advance(5_000);
    await loop.runOnce();
    clock.advance(5 * 60_000);
    await loop.runOnce();
    clock.advance(24 * 3_600_000);
    assert.equal(await loop.runOnce(), 0);
    const [delivery] = await deliveryRows(get().db, body.data.id);
    assert.deepEqual({ status: delivery.status, attempts: delivery.attempts, code: delivery.last_status_code }, { status: "failed", attempts: 3, code: 500 });
  });

  test("a 3xx is a failed attempt and its Location is never requested", async () => {
    const { apiKey } = await customer();
    const { body } = await register(server, apiKey, { url: `${receiver.url}/moved`, events: ["job.completed"] });
    await completeJob(server, apiKey);
    receiver.answers.push({ status: 307, headers: { location: `${receiver.url}/elsewhere` } });
    await deliverer(get().db, server, outbound).runOnce();
    assert.deepEqual(receiver.received.map((r) => r.path), ["/moved"]);
    const [delivery] = await deliveryRows(get().db, body.data.id);
    assert.deepEqual({ status: delivery.status, code: delivery.last_status_code }, { status: "pending", code: 307 });
  });

  test("a 410 disables the endpoint: nothing more is sent to it", async () => {
    const { apiKey } = await customer();
    const { body } = await register(server, apiKey, { url: `${receiver.url}/gone`, events: ["job.completed"] });
    await completeJob(server, apiKey);
    receiver.answers.push(410);
    const loop = deliverer(get().db, server, outbound);
    await loop.runOnce();
    const listed = await json(await server.request("/api/v1/webhooks", { key: apiKey }));
    assert.equal(listed.data.find((e: any) => e.id === body.data.id).enabled, false);
    await completeJob(server, apiKey);
    assert.equal(await loop.runOnce(), 0);
    assert.equal(receiver.received.length, 1);
    const rows = await deliveryRows(get().db, body.data.id);
    assert.deepEqual(rows.map((r) => [r.status, r.last_status_code]), [["failed", 410]]);
  });

  test("after a rotation both secrets sign, each verifying on its own", async () => {
    const { apiKey } = await customer();
    const { body } = await register(server, apiKey, { url: `${receiver.url}/rotated`, events: ["job.completed"] });
    const rotated = await server.request(`/api/v1/webhooks/${body.data.id}/rotate`, { method: "POST", key: apiKey });
    assert.equal(rotated.status, 200);
    const { data } = await json(rotated);
    assert.match(data.secret, /^whsec_/);
    assert.notEqual(data.secret, body.data.secret);
    await completeJob(server, apiKey);
    const loop = deliverer(get().db, server, outbound);
    await loop.runOnce();
    const [got] = receiver.received;
    assert.equal(got.headers["webhook-signature"].split(" ").length, 2);
    for (const secret of [body.data.secret, data.secret]) new Webhook(secret).verify(got.raw, got.headers);
    // 24 hours on, the old secret no longer signs
    clock.advance(24 * 3_600_000 + 1000);
    await completeJob(server, apiKey);
    await loop.runOnce();
    const later = receiver.received[1];
    assert.equal(later.headers["webhook-signature"].split(" ").length, 1);
    new Webhook(data.secret).verify(later.raw, later.headers);
    assert.throws(() => new Webhook(body.data.secret).verify(later.raw, later.headers));
  });

  test("a redelivery sends the same event again, and the log pages newest first", async () => {
    const { apiKey } = await customer();
    const { body } = await register(server, apiKey, { url: `${receiver.url}/log`, events: ["job.completed"] });
    await completeJob(server, apiKey);
    const loop = deliverer(get().db, server, outbound);
    await loop.runOnce();
    const log = await json(await server.request(`/api/v1/webhooks/${body.data.id}/deliveries`, { key: apiKey }));
    assert.equal(log.data.length, 1);
    assert.deepEqual(Object.keys(log.data[0]).sort(), ["attempts", "created_at", "delivered_at", "event_id", "id", "last_status_code", "next_attempt_at", "status", "type"]);
    assert.equal(log.data[0].status, "delivered");
    assert.equal(log.meta.next_cursor, null);

    clock.advance(1000);
    const res = await server.request(`/api/v1/webhooks/${body.data.id}/deliveries/${log.data[0].id}/redeliver`, { method: "POST", key: apiKey });
    assert.equal(res.status, 202);
    const again = await json(res);
    assert.equal(again.data.event_id, log.data[0].event_id);
    assert.equal(again.data.status, "pending");
    await loop.runOnce();
    assert.equal(receiver.received.length, 2);
    assert.equal(receiver.received[1].headers["webhook-id"], receiver.received[0].headers["webhook-id"]);
    assert.equal(receiver.received[1].raw.toString(), receiver.received[0].raw.toString());

    const after = await json(await server.request(`/api/v1/webhooks/${body.data.id}/deliveries`, { key: apiKey }));
    assert.deepEqual(after.data.map((d: any) => d.id), [again.data.id, log.data[0].id]);
    const unknown = await server.request(`/api/v1/webhooks/${body.data.id}/deliveries/${crypto.randomUUID()}/redeliver`, { method: "POST", key: apiKey });
    assert.equal(unknown.status, 404);
    assert.equal((await json(unknown)).code, "DELIVERY_NOT_FOUND");
    // another account's endpoint is not found
    const other = await customer();
    const foreign = await server.request(`/api/v1/webhooks/${body.data.id}/deliveries`, { key: other.apiKey });
    assert.equal(foreign.status, 404);
    assert.equal((await json(foreign)).code, "WEBHOOK_NOT_FOUND");
  });

  test("the delivery log pages by cursor", async () => {
    const { apiKey } = await customer();
    const { body } = await register(server, apiKey, { url: `${receiver.url}/many`, events: ["job.completed"] });
    for (let i = 0; i < 52; i++) {
      clock.advance(1000);
      await completeJob(server, apiKey);
    }
    const first = await json(await server.request(`/api/v1/webhooks/${body.data.id}/deliveries`, { key: apiKey }));
    assert.equal(first.data.length, 50);
    assert.ok(first.meta.next_cursor);
    const second = await json(await server.request(`/api/v1/webhooks/${body.data.id}/deliveries?cursor=${first.meta.next_cursor}`, { key: apiKey }));
    assert.equal(second.data.length, 2);
    assert.equal(second.meta.next_cursor, null);
    const times = [...first.data, ...second.data].map((d: any) => d.created_at);
    assert.deepEqual(times, [...times].sort().reverse());
    const bad = await server.request(`/api/v1/webhooks/${body.data.id}/deliveries?cursor=nope`, { key: apiKey });
    assert.equal(bad.status, 400);
    assert.equal((await json(bad)).code, "INVALID_CURSOR");
  });

  test("an outbound refusal at send time (the host now resolves elsewhere) is a failed attempt, logged", async () => {
    const { apiKey } = await customer();
    const { body } = await register(server, apiKey, { url: `${receiver.url}/rebound`, events: ["job.completed"] });
    await completeJob(server, apiKey);
    const refusing: Outbound = {
      check: async () => {},
      send: async () => {
        throw new OutboundError("address", "resolved to 10.0.0.1");
      },
    };
    const logs: string[] = [];
    await deliverer(get().db, server, refusing, logs).runOnce();
    assert.equal(receiver.received.length, 0);
    const [delivery] = await deliveryRows(get().db, body.data.id);
    assert.deepEqual({ status: delivery.status, attempts: delivery.attempts, code: delivery.last_status_code }, { status: "pending", attempts: 1, code: null });
    assert.equal(logs.length, 1);
    assert.match(logs[0], new RegExp(`webhook endpoint ${body.data.id}: .*failed \\(not sent: address\\)`));
  });

  test("the running loop delivers a new event within seconds of its cause, woken at commit", async () => {
    const { apiKey } = await customer();
    await register(server, apiKey, { url: `${receiver.url}/live`, events: ["job.completed"] });
    const loop = deliverer(get().db, server, outbound);
    await loop.start();
    try {
      const started = Date.now();
      await completeJob(server, apiKey);
      await receiver.waitFor(1, 10_000);
      assert.ok(Date.now() - started < 10_000);
    } finally {
      await loop.stop();
    }
  });

  describe("metrics", () => {
    test("/metrics shows deliveries by status, the queue and attempts by outcome", async () => {
      const res = await server.request("/metrics");
      const text = await res.text();
      assert.match(text, /walletid_webhook_deliveries\{status="delivered"\} \d+/);
      assert.match(text, /walletid_webhook_queue_depth \d+/);
      assert.match(text, /walletid_webhook_oldest_pending_age_seconds \d+/);
      assert.match(text, /walletid_webhook_attempts_total\{outcome="failed"\} \d+/);
      assert.match(text, /walletid_webhook_attempts_total\{outcome="gone"\} \d+/);
    });
  });
});
