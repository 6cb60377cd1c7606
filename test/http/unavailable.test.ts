// An unavailable database is 503 SERVICE_UNAVAILABLE with Retry-After on every route, never 500,
// whichever statement of the request it strikes and whichever class of failure it is; through a
// real listening server, on both drivers.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { DatabaseTimeoutError } from "../../src/db/deadline.ts";
import type { Db } from "../../src/db/types.ts";
import { createUsageRecorder } from "../../src/ledger/usage.ts";
import { eachDatabase } from "../support/db.ts";
import { failingDb } from "../support/failing-db.ts";
import { W, loadFixtures } from "../support/fixtures.ts";
import { address, assertErrorBody, expectStatus, importIndex } from "../support/http.ts";
import { createClock, createCustomer, startServer, type TestServer } from "../support/server.ts";

/** One failure of each class the service must answer 503 (see src/db/errors.ts). */
export const UNAVAILABLE_FAILURES: Array<[string, () => Error]> = [
  ["57P01 admin shutdown", () => Object.assign(new Error("terminating connection due to administrator command"), { code: "57P01", severity: "FATAL" })],
  ["55000 not accepting connections", () => Object.assign(new Error('database "w" is not currently accepting connections'), { code: "55000", severity: "FATAL" })],
  ["08006 connection failure", () => Object.assign(new Error("connection failure"), { code: "08006", severity: "FATAL" })],
  ["53300 too many connections", () => Object.assign(new Error("sorry, too many clients already"), { code: "53300", severity: "FATAL" })],
  ["57P03 cannot connect now", () => Object.assign(new Error("the database system is starting up"), { code: "57P03", severity: "FATAL" })],
  ["57014 statement timeout", () => Object.assign(new Error("canceling statement due to statement timeout"), { code: "57014", severity: "ERROR" })],
  ["EPIPE", () => Object.assign(new Error("write EPIPE"), { code: "EPIPE", errno: -32, syscall: "write" })],
  ["ECONNRESET", () => Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET", errno: -104, syscall: "read" })],
  ["CONNECTION_CLOSED", () => Object.assign(new Error("write CONNECTION_CLOSED 127.0.0.1:5432"), { code: "CONNECTION_CLOSED", errno: "CONNECTION_CLOSED" })],
  ["CONNECT_TIMEOUT", () => Object.assign(new Error("write CONNECT_TIMEOUT 127.0.0.1:5432"), { code: "CONNECT_TIMEOUT", errno: "CONNECT_TIMEOUT" })],
  ["the client deadline", () => new DatabaseTimeoutError(4000)],
];

const CROWD = 101;

interface Probe {
  name: string;
  /** A request; `key` is a fresh customer's key for the routes a failure leaves state on (jobs). */
  request: (key: string) => [string, RequestInit];
}

eachDatabase("an unavailable database answers 503 on every route", (get) => {
  const clock = createClock("2026-11-20T12:00:30Z");
  let server: TestServer;
  let db: Db;
  let key: string;
  let cursor: string;
  let jobId: string;
  let failAt: number | undefined;
  let failure: () => Error = UNAVAILABLE_FAILURES[0][1];
  let statements = 0;

  const auth = (k: string) => ({ Authorization: `Bearer ${k}` });
  const post = (k: string, path: string, wallets: string[]): [string, RequestInit] => [
    path,
    { method: "POST", headers: { ...auth(k), "Content-Type": "application/json" }, body: JSON.stringify({ wallets }) },
  ];
  const ten = [W.full, W.selfDeclared, W.twoHandles, W.corrected, W.ensOnly, W.aggregated, W.stale, W.empty, W.neverSeen, W.agent];
  const probes = (): Probe[] => [
    { name: "GET /wallet", request: () => [`/api/v1/wallet/${W.full}`, { headers: auth(key) }] },
    { name: "POST /batch", request: () => post(key, "/api/v1/batch", [W.full, W.farcasterOnly, W.neverSeen]) },
    { name: "POST /estimate", request: () => post(key, "/api/v1/estimate", ten) },
    { name: "GET /reverse/twitter (first page)", request: () => ["/api/v1/reverse/twitter/crowd", { headers: auth(key) }] },
    { name: "GET /reverse/twitter (next page)", request: () => [`/api/v1/reverse/twitter/crowd?cursor=${cursor}`, { headers: auth(key) }] },
    { name: "GET /reverse/farcaster", request: () => ["/api/v1/reverse/farcaster/alice", { headers: auth(key) }] },
    { name: "GET /usage", request: () => ["/api/v1/usage?period=day", { headers: auth(key) }] },
    { name: "GET /stats", request: () => ["/api/v1/stats", { headers: auth(key) }] },
    { name: "POST /jobs (run inline)", request: (fresh) => post(fresh, "/api/v1/jobs", [W.full, W.agent]) },
    { name: "GET /jobs/{id}", request: () => [`/api/v1/jobs/${jobId}`, { headers: auth(key) }] },
    { name: "GET /healthz", request: () => ["/healthz", {}] },
  ];

  before(async () => {
    db = get().db;
    await loadFixtures(db, clock.now());
    const crowd = Array.from({ length: CROWD }, (_, i) => ({ wallet: address(i + 1, "c"), kind: "twitter", route: "x-signin", handle: "crowd" }));
    await importIndex(db, crowd, clock.now());
    key = (await createCustomer(db, { packs: [{ pack: "Index" }], now: clock.now() })).apiKey;
    // usage events are written on the real database: a background write must not take a failure meant for a request
    server = await startServer(
      failingDb(db, () => {
        statements++;
        return failAt !== undefined && statements >= failAt ? failure() : undefined;
      }),
      { clock, app: { usage: createUsageRecorder(db) } },
    );
    const page = await expectStatus(await server.request("/api/v1/reverse/twitter/crowd", { headers: auth(key) }), 200);
    cursor = page.body.meta.next_cursor;
    assert.ok(cursor, "a second page exists");
    const job = await expectStatus(await server.request(...post(key, "/api/v1/jobs", [W.full])), 202);
    jobId = job.body.data.job_id;
    // the first /stats of a database counts the index: later ones only read, as the probe below
    await expectStatus(await server.request("/api/v1/stats", { headers: auth(key) }), 200);
  });
  after(() => server.close());

  async function freshKey(): Promise<string> {
    return (await createCustomer(db, { packs: [{ pack: "Agent" }], now: clock.now() })).apiKey;
  }

  test("whichever statement fails, with whichever class of unavailability: 503 SERVICE_UNAVAILABLE with Retry-After", async () => {
    let variant = 0;
    for (const probe of probes()) {
      // a healthy run counts the request's statements
      failAt = undefined;
      clock.advance(60_000);
      statements = 0;
      await expectStatus(await server.request(...probe.request(await freshKey())), probe.name.startsWith("POST /jobs") ? 202 : 200, probe.name);
      const count = statements;
      assert.ok(count > 0, `${probe.name} runs statements`);
      for (let k = 1; k <= count; k++) {
        const [name, make] = UNAVAILABLE_FAILURES[variant++ % UNAVAILABLE_FAILURES.length];
        failure = make;
        clock.advance(60_000);
        const fresh = await freshKey();
        statements = 0;
        failAt = k;
        const what = `${probe.name}, statement ${k} of ${count} failing with ${name}`;
        const res = await expectStatus(await server.request(...probe.request(fresh)), 503, what);
        failAt = undefined;
        assertErrorBody(res, "SERVICE_UNAVAILABLE");
        assert.match(res.headers.get("Retry-After") ?? "", /^[1-9]\d*$/, `Retry-After on ${what}`);
        assert.doesNotMatch(res.text, /57P|55000|EPIPE|CONNECTION_|statement|administrator|at \//, `no detail leaks: ${what}`);
      }
    }
    assert.ok(variant >= UNAVAILABLE_FAILURES.length, `every class was tried (${variant} failures)`);
  });

  test("the cursor secret's first load failing is 503, and the next request reads it", async () => {
    failAt = undefined;
    const fresh = await startServer(failingDb(db, () => (failAt !== undefined ? failure() : undefined)), { clock, app: { usage: createUsageRecorder(db) } });
    try {
      failAt = 1;
      failure = UNAVAILABLE_FAILURES.find(([n]) => n === "EPIPE")![1];
      const refused = await expectStatus(await fresh.request(`/api/v1/reverse/twitter/crowd?cursor=${cursor}`, { headers: auth(key) }), 503);
      assertErrorBody(refused, "SERVICE_UNAVAILABLE");
      failAt = undefined;
      const page = await expectStatus(await fresh.request(`/api/v1/reverse/twitter/crowd?cursor=${cursor}`, { headers: auth(key) }), 200);
      assert.equal(page.body.data.length, 1, "the second page holds the 101st wallet");
    } finally {
      await fresh.close();
    }
  });
});
