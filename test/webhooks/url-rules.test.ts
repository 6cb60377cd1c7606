// Webhook URLs under the real outbound module (src/outbound-node.ts), not the tests' loopback
// one: every refused form of the URL rules at registration, and a name whose DNS answer changes
// to a private address between registration and delivery refused at the connection, with the
// receiver reached by nothing and the attempt counted as failed.
import assert from "node:assert/strict";
import { connect } from "node:net";
import { after, before, test } from "node:test";
import { eachDatabase } from "../support/db.ts";
import { address } from "../support/http.ts";
import { createClock, createCustomer, json, startServer, type TestServer } from "../support/server.ts";
import { createNodeOutbound, type NodeOutbound } from "../../src/outbound-node.ts";
import { deliverer, deliveryRows, startReceiver, type Receiver } from "./support.ts";

const PUBLIC_V4 = "93.184.215.14";

/** A resolver from a table; a function entry answers per call (the n-th lookup of that name). */
function resolver(table: Record<string, string[] | ((call: number) => string[])>) {
  const calls = new Map<string, number>();
  return async (hostname: string) => {
    const n = (calls.get(hostname) ?? 0) + 1;
    calls.set(hostname, n);
    const entry = table[hostname];
    if (!entry) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: "ENOTFOUND" });
    return typeof entry === "function" ? entry(n) : entry;
  };
}

eachDatabase("webhook URL rules", (get) => {
  const clock = createClock();
  let server: TestServer;
  let receiver: Receiver;
  let outbound: NodeOutbound;
  const dialed: string[] = [];

  before(async () => {
    receiver = await startReceiver();
    const port = Number(new URL(receiver.url).port);
    outbound = createNodeOutbound({
      lookup: resolver({
        "hooks.example": [PUBLIC_V4],
        "private.example": ["10.1.2.3"],
        "mixed.example": [PUBLIC_V4, "192.168.1.5"],
        "mapped.example": ["::ffff:127.0.0.1"],
        "v6local.example": ["fd00::1"],
        "metadata.example": ["169.254.169.254"],
        // public when the endpoint is registered, loopback by the time it is delivered to
        "rebind.example": (n) => (n === 1 ? [PUBLIC_V4] : ["127.0.0.1"]),
      }),
      // whatever address passed the rules, the test's connection goes to the local receiver
      connect: (target) => (dialed.push(target.address), connect(port, "127.0.0.1")),
    });
    server = await startServer(get().db, { clock, app: { outbound } });
  });
  after(async () => {
    await server.close();
    await outbound.close();
    await receiver.close();
  });

  test("every refused form is 400 INVALID_WEBHOOK_URL at registration, and nothing is connected to", async () => {
    const { apiKey } = await createCustomer(get().db, { packs: [{ pack: "Agent", quantity: 1 }], now: clock.now() });
    const refused = [
      "http://hooks.example/hook",
      "ftp://hooks.example/hook",
      "https://user:pw@hooks.example/hook",
      "https://127.0.0.1/hook",
      "https://2130706433/hook",
      "https://0x7f000001/hook",
      "https://0177.0.0.1/hook",
      "https://127.1/hook",
      "https://[::1]/hook",
      "https://[::ffff:127.0.0.1]/hook",
      "https://10.0.0.1/hook",
      "https://100.64.0.1/hook",
      "https://169.254.169.254/latest/meta-data",
      "https://224.0.0.1/hook",
      "https://[fe80::1]/hook",
      "https://[fc00::1]/hook",
      "https://private.example/hook",
      "https://mixed.example/hook",
      "https://mapped.example/hook",
      "https://v6local.example/hook",
      "https://metadata.example/hook",
    ];
    for (const url of refused) {
      const res = await server.request("/api/v1/webhooks", { method: "POST", key: apiKey, body: JSON.stringify({ url }) });
      assert.equal(res.status, 400, url);
      assert.equal((await json(res)).code, "INVALID_WEBHOOK_URL", url);
    }
    assert.deepEqual(dialed, [], "registration never connects");
    const listed = await json(await server.request("/api/v1/webhooks", { key: apiKey }));
    assert.deepEqual(listed.data, []);
  });

  test("a name that resolves to loopback at delivery time is refused at the connection: a failed attempt, nothing received", async () => {
    const { apiKey } = await createCustomer(get().db, { packs: [{ pack: "Agent", quantity: 1 }], now: clock.now() });
    const created = await server.request("/api/v1/webhooks", {
      method: "POST",
      key: apiKey,
      body: JSON.stringify({ url: "https://rebind.example/hook", events: ["job.completed"] }),
    });
    assert.equal(created.status, 201, await created.clone().text());
    const endpointId = (await json(created)).data.id;

    const job = await json(
      await server.request("/api/v1/jobs", { method: "POST", key: apiKey, body: JSON.stringify({ wallets: [address(1, "e1")] }) }),
    );
    assert.equal(job.data.status, "completed");
    const logs: string[] = [];
    const delivery = deliverer(get().db, server, outbound, logs);
    await delivery.runOnce();

    assert.equal(receiver.received.length, 0, "the receiver is never reached");
    assert.deepEqual(dialed, [], "no connection was opened to the rebound address");
    const [row] = await deliveryRows(get().db, endpointId);
    assert.equal(row.attempts, 1);
    assert.equal(row.last_status_code, null);
    assert.notEqual(row.status, "delivered");
    assert.ok(logs.some((line) => line.includes(endpointId)), `a log line names the endpoint: ${logs.join(" | ")}`);
    assert.ok(!logs.some((line) => line.includes("whsec_")), "no secret in the logs");
  });
});
