// A delivery process killed -9 between the cause and the delivery, and one killed mid-attempt:
// the event is delivered by the process started after it (PostgreSQL: several processes).
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { eachDatabase } from "../support/db.ts";
import { loopbackOutbound } from "../support/outbound.ts";
import { ROOT } from "../support/process.ts";
import { createClock, createCustomer, json, startServer, type TestServer } from "../support/server.ts";
import { address } from "../support/http.ts";
import { startReceiver, type Receiver } from "./support.ts";

function startLoop(databaseUrl: string): Promise<{ child: ChildProcess; exited: Promise<unknown> }> {
  const child = spawn(process.execPath, ["--import", "tsx", join(ROOT, "test/support/deliver-process.ts")], {
    cwd: ROOT,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, DATABASE_URL: databaseUrl, WEBHOOK_TIMEOUT_MS: "1000" },
  });
  const exited = new Promise((resolve) => child.once("exit", resolve));
  return new Promise((resolve, reject) => {
    let output = "";
    const timer = setTimeout(() => reject(new Error(`the delivery process did not start: ${output}`)), 60_000);
    child.stderr!.on("data", (d) => (output += d));
    child.stdout!.on("data", (d) => {
      output += d;
      if (output.includes("delivering as")) {
        clearTimeout(timer);
        resolve({ child, exited });
      }
    });
  });
}

eachDatabase("a killed delivery process", (get) => {
  const clock = createClock();
  let server: TestServer;
  let receiver: Receiver;

  before(async () => {
    server = await startServer(get().db, { clock, app: { outbound: loopbackOutbound() } });
    receiver = await startReceiver();
  });
  after(async () => {
    await server.close();
    await receiver.close();
  });

  test("killed -9 mid-attempt, and with the event not yet sent: the next process delivers it", async (t) => {
    const url = get().url;
    if (!url) return t.skip("the embedded database opens in one process only");
    const { apiKey } = await createCustomer(get().db, { packs: [{ pack: "Agent", quantity: 2 }], now: clock.now() });
    await json(await server.request("/api/v1/webhooks", { method: "POST", key: apiKey, body: JSON.stringify({ url: `${receiver.url}/k`, events: ["job.completed"] }) }));
    // the cause, committed while no loop runs
    const submitted = await server.request("/api/v1/jobs", { method: "POST", key: apiKey, body: JSON.stringify({ wallets: [address(1, "4c")] }) });
    assert.equal((await json(submitted)).data.status, "completed");

    // the first process claims it and is killed while the receiver holds the request
    receiver.hold = true;
    const first = await startLoop(url);
    await receiver.waitFor(1, 30_000);
    first.child.kill("SIGKILL");
    await first.exited;
    receiver.hold = false;

    // the second takes the claim over once its lease (2 x 1 s + 5 s) has run out
    const secondLoop = await startLoop(url);
    const statusOf = async () =>
      (await get().db.query<{ status: string; attempts: number }>(
        "SELECT d.status, d.attempts FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id WHERE e.url = $1",
        [`${receiver.url}/k`],
      ))[0];
    try {
      await receiver.waitFor(2, 30_000);
      // its outcome is written just after the receiver answered
      for (let i = 0; i < 100 && (await statusOf()).status !== "delivered"; i++) await new Promise((resolve) => setTimeout(resolve, 100));
    } finally {
      secondLoop.child.kill("SIGTERM");
      await secondLoop.exited;
    }
    assert.equal(receiver.received[0].headers["webhook-id"], receiver.received[1].headers["webhook-id"]);
    assert.deepEqual(await statusOf(), { status: "delivered", attempts: 2 });
  });
});
