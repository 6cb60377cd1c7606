// Logs and metrics: JSON lines with LOG_LEVEL honoured at every level, an access line per request
// (request id kept from X-Request-Id or traceparent, route template, account, units, matches,
// outcome), no secret in any line of a whole run's log, and GET /metrics in the Prometheus text
// format, moving by the right amounts, protected by METRICS_TOKEN or loopback.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { createLogger, incomingRequestId, redact, type Level } from "../src/observe/log.ts";
import { Registry } from "../src/observe/metrics.ts";
import { eachDatabase } from "./support/db.ts";
import { createClock, createCustomer, startServer, type TestServer } from "./support/server.ts";
import { address, batchInit, importIndex } from "./support/http.ts";

const START = "2026-11-20T12:00:30Z";

describe("the logger", () => {
  test("LOG_LEVEL drops everything below it, at every level; silent drops everything", async () => {
    const levels: Level[] = ["debug", "info", "warn", "error"];
    for (const threshold of [...levels, "silent"] as const) {
      const out: string[] = [];
      const logger = createLogger({ level: threshold, write: (t) => out.push(t) });
      for (const level of levels) logger.log(`a ${level} line`, level);
      logger.access({ request_id: "r", method: "GET", route: "/healthz", status: 200, duration_ms: 1, outcome: "ok" });
      logger.flush();
      const lines = out.join("").split("\n").filter(Boolean).map((l) => JSON.parse(l));
      const rank = (l: string) => ["debug", "info", "warn", "error", "silent"].indexOf(l);
      for (const line of lines) assert.ok(rank(line.level) >= rank(threshold), `${threshold} lets through only its level and above: ${JSON.stringify(line)}`);
      assert.equal(lines.filter((l) => l.msg !== "request").length, levels.filter((l) => rank(l) >= rank(threshold)).length, `LOG_LEVEL=${threshold}`);
      for (const line of lines) {
        assert.ok(!Number.isNaN(Date.parse(line.time)), "time");
        assert.ok(typeof line.msg === "string");
      }
    }
  });

  test("times are the wall clock in ISO 8601 with milliseconds, as Date writes them", () => {
    const out: string[] = [];
    const logger = createLogger({ level: "info", write: (t) => out.push(t) });
    const before = Date.now();
    for (let i = 0; i < 50; i++) logger.access({ request_id: `r${i}`, method: "GET", route: "/healthz", status: 200, duration_ms: 1, outcome: "ok" });
    logger.flush();
    const after = Date.now();
    for (const line of out.join("").split("\n").filter(Boolean).map((l) => JSON.parse(l))) {
      assert.match(line.time, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
      assert.equal(new Date(Date.parse(line.time)).toISOString(), line.time);
      assert.ok(Date.parse(line.time) >= before && Date.parse(line.time) <= after, `${line.time} within the test`);
    }
  });

  test("an access line stays one JSON object whatever its ids hold", () => {
    const out: string[] = [];
    const logger = createLogger({ level: "info", write: (t) => out.push(t) });
    const ids = ['quote"d', "back\\slash", "new\nline", "tab\there", "é-ü", "0191e4c2-9a1f-7b3c-8d2e-5f6a7b8c9d0e", "a/b:c@d.e+f=g h-_"];
    for (const id of ids) {
      logger.access({ request_id: id, method: "GET", route: "/healthz", status: 200, duration_ms: 1.25, account_id: id, units: 2, matches: 1, outcome: "ok" });
    }
    logger.flush();
    const lines = out.join("").split("\n").filter(Boolean).map((l) => JSON.parse(l));
    assert.deepEqual(lines.map((l) => l.request_id), ids);
    assert.deepEqual(lines.map((l) => l.account_id), ids);
    assert.deepEqual(lines.map((l) => [l.units, l.matches, l.duration_ms]), ids.map(() => [2, 1, 1.25]));
  });

  test("lines are written in batches, and the pretty format reads as text", async () => {
    const out: string[] = [];
    const logger = createLogger({ level: "info", write: (t) => out.push(t) });
    logger.log("one");
    logger.log("two", "warn", { job: "j1" });
    assert.equal(out.length, 0, "nothing written within the turn");
    await new Promise((resolve) => setTimeout(resolve, 80));
    assert.equal(out.length, 1, "one write for both lines, within 50 ms");
    assert.deepEqual(out[0].trim().split("\n").map((l) => JSON.parse(l).msg), ["one", "two"]);
    const pretty: string[] = [];
    const p = createLogger({ level: "info", format: "pretty", write: (t) => pretty.push(t) });
    p.log("hello", "warn", { job: "j1" });
    p.flush();
    assert.match(pretty[0], /^\d\d:\d\d:\d\d\.\d{3} WARN  hello  job=j1\n$/);
    // an access line of a request nobody was metered for names no account, units or matches
    p.access({ request_id: "r1", method: "GET", route: "/healthz", status: 200, duration_ms: 1.5, account_id: undefined, units: undefined, matches: undefined, outcome: "ok" });
    p.flush();
    assert.match(pretty[1], /^\d\d:\d\d:\d\d\.\d{3} INFO  request  request_id=r1 method=GET route=\/healthz status=200 duration_ms=1\.5 outcome=ok\n$/);
  });

  test("credentials are redacted from any line", () => {
    const key = "wid_live_" + "A".repeat(32);
    for (const secret of [key, "wid_mcp_abcdefghijklmnop", `Bearer ${key}`, "0x" + "ab".repeat(65), "eyJ" + "x".repeat(40)]) {
      assert.ok(!redact(`oops: ${secret} leaked`).includes(secret), secret);
    }
    assert.equal(redact("wallet 0x" + "1".repeat(40)), "wallet 0x" + "1".repeat(40), "addresses are not secrets");
  });

  test("an access line is one JSON object, and a credential sent as the request id is redacted", () => {
    const out: string[] = [];
    const logger = createLogger({ level: "info", write: (t) => out.push(t) });
    const key = "wid_live_" + "B".repeat(32);
    logger.access({ request_id: key, method: "GET", route: "/api/v1/wallet/:address", status: 402, duration_ms: 1.5, account_id: "a-1", units: 1, matches: 0, outcome: "INSUFFICIENT_CREDITS" });
    logger.access({ request_id: 'quote"and\\slash', method: "POST", route: "/mcp", status: 200, duration_ms: 0.25, outcome: "ok" });
    logger.flush();
    const text = out.join("");
    assert.ok(!text.includes(key), "the key is not in the log");
    const [paid, free] = text.trim().split("\n").map((l) => JSON.parse(l));
    assert.deepEqual({ ...paid, time: undefined }, {
      time: undefined, level: "info", msg: "request", request_id: "[redacted]", method: "GET", route: "/api/v1/wallet/:address",
      status: 402, duration_ms: 1.5, account_id: "a-1", units: 1, matches: 0, outcome: "INSUFFICIENT_CREDITS",
    });
    assert.equal(free.request_id, 'quote"and\\slash');
    assert.equal(free.account_id, undefined, "no account fields without an account");
    assert.ok(!Number.isNaN(Date.parse(paid.time)));
  });

  test("request ids: a safe X-Request-Id is kept, else a traceparent's trace id, else none", () => {
    assert.equal(incomingRequestId(new Headers({ "X-Request-Id": "abc-123" })), "abc-123");
    assert.equal(incomingRequestId(new Headers({ "X-Request-Id": "bad id with spaces" })), undefined);
    assert.equal(incomingRequestId(new Headers({ "X-Request-Id": "x".repeat(129) })), undefined);
    const trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    assert.equal(incomingRequestId(new Headers({ traceparent: `00-${trace}-00f067aa0ba902b7-01` })), trace);
    assert.equal(incomingRequestId(new Headers({ traceparent: `00-${"0".repeat(32)}-00f067aa0ba902b7-01` })), undefined);
  });
});

describe("the exposition format", () => {
  test("counters, histograms and gauges: HELP and TYPE, sorted and escaped labels, cumulative buckets", async () => {
    const r = new Registry();
    const c = r.counter("t_total", "A counter");
    c.inc({ b: "2", a: 'x"y\\z\nw' });
    c.inc({ b: "2", a: 'x"y\\z\nw' }, 2);
    const h = r.histogram("t_seconds", "A histogram", [0.1, 1]);
    h.observe({ route: "/r" }, 0.05);
    h.observe({ route: "/r" }, 0.5);
    h.observe({ route: "/r" }, 5);
    const text = await r.expose([
      { name: "t_gauge", help: "A gauge", read: () => [{ value: 7 }] },
      { name: "t_broken", help: "Fails", read: () => Promise.reject(new Error("down")) },
    ]);
    assert.match(text, /# HELP t_total A counter\n# TYPE t_total counter\nt_total\{a="x\\"y\\\\z\\nw",b="2"\} 3\n/);
    assert.match(text, /t_seconds_bucket\{le="0\.1",route="\/r"\} 1\nt_seconds_bucket\{le="1",route="\/r"\} 2\nt_seconds_bucket\{le="\+Inf",route="\/r"\} 3\nt_seconds_sum\{route="\/r"\} 5\.55\nt_seconds_count\{route="\/r"\} 3\n/);
    assert.match(text, /# TYPE t_gauge gauge\nt_gauge 7\n/);
    assert.ok(!text.includes("t_broken"), "a failing gauge is left out");
  });

  test("a series handle counts in the same series as inc and observe with its labels", async () => {
    const r = new Registry();
    const c = r.counter("s_total", "A counter");
    const h = r.histogram("s_seconds", "A histogram", [1]);
    const count = c.series({ route: "/r", status: "200" });
    const observe = h.series({ route: "/r" });
    count();
    count();
    c.inc({ status: "200", route: "/r" });
    observe(0.5);
    h.observe({ route: "/r" }, 2);
    assert.equal(c.get({ route: "/r", status: "200" }), 3);
    const text = await r.expose();
    assert.match(text, /s_seconds_bucket\{le="1",route="\/r"\} 1\ns_seconds_bucket\{le="\+Inf",route="\/r"\} 2\n/);
  });

  test("the same labels given in another order count in one series", async () => {
    const r = new Registry();
    const c = r.counter("o_total", "A counter");
    c.inc({ route: "/r", status: "200" });
    c.inc({ status: "200", route: "/r" }, 2);
    const h = r.histogram("o_seconds", "A histogram", [1]);
    h.observe({ route: "/r", method: "GET" }, 0.5);
    h.observe({ method: "GET", route: "/r" }, 0.5);
    const text = await r.expose();
    assert.equal(c.get({ status: "200", route: "/r" }), 3);
    assert.equal(text.split("\n").filter((l) => l.startsWith("o_total{")).join("\n"), 'o_total{route="/r",status="200"} 3');
    assert.match(text, /o_seconds_count\{method="GET",route="\/r"\} 2\n/);
    assert.equal(text.split("\n").filter((l) => l.startsWith("o_seconds_count")).length, 1);
  });
});

/** The value of one sample in an exposition, 0 when absent. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number {
  const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const line of text.split("\n")) {
    if (!line.startsWith(name)) continue;
    const m = /^([^{ ]+)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = (m[2] ?? "").split(/,(?=[a-z_]+=)/).filter(Boolean);
    if (want.every((w) => have.includes(w)) && have.length === want.length) return Number(m[3]);
  }
  return 0;
}

eachDatabase("logs and metrics through a server", (get) => {
  let server: TestServer;
  const written: string[] = [];
  const BILL = address(3, "e");

  before(async () => {
    const logger = createLogger({ level: "debug", write: (t) => written.push(t) });
    server = await startServer(get().db, { clock: createClock(START), app: { logger, log: logger.log } });
    await importIndex(get().db, [{ wallet: BILL, kind: "twitter", route: "x-signin", handle: "observed" }], new Date(START));
  });
  after(async () => {
    await server.close();
  });

  const scrape = async (init: RequestInit = {}) => {
    const res = await server.request("/metrics", init);
    return { status: res.status, text: await res.text(), type: res.headers.get("content-type") };
  };

  test("traffic moves the counters by the right amounts; jobs, pool and maintenance gauges are there", async () => {
    const c = await createCustomer(get().db, { packs: [{ pack: "Agent" }], now: server.clock.now() });
    const before = await scrape();
    assert.equal(before.status, 200);
    assert.match(before.type ?? "", /^text\/plain; version=0\.0\.4/);
    const route = { route: "/api/v1/wallet/:address", method: "GET", status: "200" };
    for (let i = 0; i < 3; i++) assert.equal((await server.request(`/api/v1/wallet/${BILL}`, { key: c.apiKey })).status, 200);
    assert.equal((await server.request(`/api/v1/wallet/${BILL}`, { key: "wid_live_" + "Z".repeat(32) })).status, 401);
    const after = await scrape();
    assert.equal(sample(after.text, "walletid_http_requests_total", route) - sample(before.text, "walletid_http_requests_total", route), 3);
    assert.equal(sample(after.text, "walletid_metering_outcomes_total", { outcome: "ok" }) - sample(before.text, "walletid_metering_outcomes_total", { outcome: "ok" }), 3);
    assert.equal(sample(after.text, "walletid_metering_outcomes_total", { outcome: "unauthorized" }) - sample(before.text, "walletid_metering_outcomes_total", { outcome: "unauthorized" }), 1);
    assert.equal(sample(after.text, "walletid_matches_billed_total") - sample(before.text, "walletid_matches_billed_total"), 3);
    const count = { route: "/api/v1/wallet/:address", method: "GET" };
    assert.equal(sample(after.text, "walletid_http_request_duration_seconds_count", count) - sample(before.text, "walletid_http_request_duration_seconds_count", count), 4);
    for (const status of ["pending", "processing", "completed", "failed"]) assert.match(after.text, new RegExp(`walletid_jobs\\{status="${status}"\\} \\d+`));
    assert.match(after.text, /walletid_job_queue_depth \d+/);
    assert.match(after.text, /walletid_job_oldest_pending_age_seconds \d/);
    assert.match(after.text, /walletid_db_statements_in_flight \d+/);
    assert.match(after.text, /walletid_maintenance_last_success_timestamp_seconds\{task="stats"\} \d/);
    // a scrape is not metered: no rate-limit headers
    const again = await server.request("/metrics");
    await again.text();
    assert.equal(again.headers.get("X-RateLimit-Remaining"), null);
  });

  test("access lines: request id kept, route template and never the address, account, units, matches, outcome", async () => {
    const c = await createCustomer(get().db, { packs: [{ pack: "Agent" }], now: server.clock.now() });
    const res = await server.request(`/api/v1/wallet/${BILL}`, { key: c.apiKey, headers: { "X-Request-Id": "req-observed-1" } });
    assert.equal(res.headers.get("X-Request-Id"), "req-observed-1");
    const trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    const traced = await server.request("/api/v1/wallet/0x12", { key: c.apiKey, headers: { traceparent: `00-${trace}-00f067aa0ba902b7-01` } });
    assert.equal(traced.status, 400);
    assert.equal(traced.headers.get("X-Request-Id"), trace);
    await new Promise((resolve) => setTimeout(resolve, 80)); // lines are written within 50 ms
    const lines = written.join("").split("\n").filter(Boolean).map((l) => JSON.parse(l));
    const ok = lines.find((l) => l.request_id === "req-observed-1");
    assert.deepEqual(
      { ...ok, time: undefined, duration_ms: undefined },
      { time: undefined, level: "info", msg: "request", request_id: "req-observed-1", method: "GET", route: "/api/v1/wallet/:address", status: 200, duration_ms: undefined, account_id: c.accountId, units: 1, matches: 1, outcome: "ok" },
    );
    assert.ok(typeof ok.duration_ms === "number" && ok.duration_ms >= 0);
    const refused = lines.find((l) => l.request_id === trace);
    assert.equal(refused.outcome, "INVALID_ADDRESS");
    assert.equal(refused.units, 0);
    for (const line of lines) assert.ok(!JSON.stringify(line).includes(BILL), `no raw address in a line: ${JSON.stringify(line)}`);
  });

  test("no key, token or payment signature appears anywhere in the log of all this traffic", async () => {
    const c = await createCustomer(get().db, { packs: [{ pack: "Agent" }], now: server.clock.now() });
    const secrets = [c.apiKey];
    server.clock.advance(120_000);
    await server.request("/api/v1/batch", batchInit(c.apiKey, [BILL, address(4, "e")]));
    await server.request(`/api/v1/wallet/${BILL}`, { headers: { Authorization: c.apiKey } });
    await server.request("/api/v1/usage", { key: c.apiKey });
    // a key that is not ours, a broken one, an OAuth-shaped token, and an x402 payment header
    const stranger = "wid_live_" + "Q".repeat(32);
    const token = "wid_mcp_" + "T".repeat(40);
    const payment = "eyJ4NDAyVmVyc2lvbiI6Miwic2NoZW1lIjoiZXhhY3QiLCJwYXlsb2FkIjp7fX0" + "A".repeat(30);
    secrets.push(stranger, token, payment);
    await server.request("/api/v1/usage", { key: stranger });
    await server.request("/api/v1/usage", { headers: { Authorization: `Bearer ${stranger.slice(0, 20)}` } });
    await server.request("/mcp", {
      method: "POST",
      headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json", Accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "walletid_account_balance", arguments: {} } }),
    });
    await server.request("/mcp", {
      method: "POST",
      headers: { Authorization: `Bearer ${c.apiKey}`, "Content-Type": "application/json", Accept: "application/json, text/event-stream", "Mcp-Protocol-Version": "2025-11-25" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "walletid_resolve_wallets", arguments: { wallets: [BILL] } } }),
    });
    await server.request("/api/x402/buy", { method: "POST", headers: { "PAYMENT-SIGNATURE": payment, "Content-Type": "application/json" }, body: "{}" });
    await new Promise((resolve) => setTimeout(resolve, 80)); // lines are written within 50 ms
    const log = written.join("");
    assert.ok(log.length > 1000, "the traffic was logged");
    for (const secret of secrets) assert.ok(!log.includes(secret), `a secret reached the log: ${secret.slice(0, 12)}…`);
    assert.ok(!log.includes(c.apiKey.slice(9)), "not even the key's random part");
  });

  test("METRICS=off: requests are neither counted nor timed", async () => {
    const quiet = await startServer(get().db, { clock: createClock(START), env: { METRICS: "off" } });
    try {
      const read = async () => (await (await quiet.request("/metrics")).text());
      const labels = { route: "/healthz", method: "GET", status: "200" };
      const before = sample(await read(), "walletid_http_requests_total", labels);
      for (let i = 0; i < 3; i++) await (await quiet.request("/healthz")).text();
      assert.equal(sample(await read(), "walletid_http_requests_total", labels), before);
    } finally {
      await quiet.close();
    }
  });

  test("/metrics without METRICS_TOKEN answers loopback only; with it, only the bearer of the token", async () => {
    const proxied = await startServer(get().db, { clock: createClock(START), env: { TRUST_PROXY: "1" } });
    try {
      const outside = await proxied.request("/metrics", { headers: { "X-Forwarded-For": "203.0.113.9" } });
      assert.equal(outside.status, 403);
      assert.equal((await outside.json()).code, "FORBIDDEN");
      assert.equal((await proxied.request("/metrics", { headers: { "X-Forwarded-For": "127.0.0.1" } })).status, 200);
    } finally {
      await proxied.close();
    }
    const token = "metrics-token-0123456789";
    const guarded = await startServer(get().db, { clock: createClock(START), env: { METRICS_TOKEN: token } });
    try {
      assert.equal((await guarded.request("/metrics")).status, 401);
      const wrong = await guarded.request("/metrics", { headers: { Authorization: `Bearer ${token}x` } });
      assert.equal(wrong.status, 401);
      assert.match(wrong.headers.get("WWW-Authenticate") ?? "", /^Bearer/);
      const right = await guarded.request("/metrics", { headers: { Authorization: `Bearer ${token}` } });
      assert.equal(right.status, 200);
      assert.match(await right.text(), /walletid_http_requests_total/);
    } finally {
      await guarded.close();
    }
  });
});
