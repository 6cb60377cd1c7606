// The OpenAPI document at {base_url}/openapi.json: valid OpenAPI 3.1, public, covering every route the
// app serves, and true to the wire: real responses are checked against the schemas it was built from.
// Also /healthz answering 503 when the database does not.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import * as v from "valibot";
import { Validator } from "@seriousme/openapi-schema-validator";
import { OPERATIONS, ROUTES } from "../../src/app.ts";
import { errorSchema } from "../../src/http/schemas.ts";
import { errorCases } from "../../src/openapi/document.ts";
import type { Operation } from "../../src/openapi/operation.ts";
import { openDatabase } from "../../src/db/open.ts";
import { createPostgresDatabase, eachDatabase } from "../support/db.ts";
import { W, loadFixtures } from "../support/fixtures.ts";
import { batchInit, expectStatus, type Checked } from "../support/http.ts";
import { createClock, createCustomer, startServer, type TestServer } from "../support/server.ts";

const START = "2026-11-20T12:00:30Z";
const PUBLIC_URL = "https://walletid.example";

/** The path a client sends for a document path, e.g. /api/v1/wallet/{address}. */
function servedPath(doc: any, path: string): string {
  const server: string = doc.paths[path].servers?.[0]?.url ?? doc.servers[0].url;
  return new URL(server).pathname.replace(/\/+$/, "") + path;
}

function documentRoutes(doc: any): Set<string> {
  const out = new Set<string>();
  for (const [path, item] of Object.entries<any>(doc.paths)) {
    for (const method of ["get", "post", "put", "patch", "delete"]) {
      if (item[method]) out.add(`${method.toUpperCase()} ${servedPath(doc, path)}`);
    }
  }
  return out;
}

function operation(operationId: string): Operation {
  const op = OPERATIONS.find((o) => o.operationId === operationId);
  assert.ok(op, `operation ${operationId} is declared`);
  return op;
}

/** Asserts the response has the documented status and a body of the documented schema. */
function assertMatches(op: Operation, checked: Checked): void {
  if (checked.status === op.success.status) {
    const result = v.safeParse(op.success.schema!, checked.body);
    assert.ok(result.success, `${op.operationId} ${checked.status} matches its documented schema: ${JSON.stringify(result.issues?.slice(0, 3).map((i) => [i.path?.map((p) => p.key).join("."), i.message]))} in ${checked.text.slice(0, 1500)}`);
    return;
  }
  const documented = errorCases(op).find((e) => e.status === checked.status);
  assert.ok(documented, `${op.operationId} documents status ${checked.status}: ${checked.text}`);
  assert.ok(v.is(errorSchema(documented.codes), checked.body), `${op.operationId} ${checked.status} body is {error, code} with a documented code (${documented.codes.join(", ")}): ${checked.text}`);
}

eachDatabase("OpenAPI document", (get) => {
  let server: TestServer;
  let doc: any;

  before(async () => {
    server = await startServer(get().db, { clock: createClock(START), env: { PUBLIC_URL } });
    await loadFixtures(get().db, new Date(START));
    doc = (await expectStatus(await server.request("/api/v1/openapi.json"), 200)).body;
  });
  after(async () => {
    await server.close();
  });

  test("is served without a key, as OpenAPI 3.1.0 with description version 1.0.0 and the configured servers", async () => {
    const res = await expectStatus(await server.request("/api/v1/openapi.json"), 200);
    assert.match(res.headers.get("Content-Type") ?? "", /application\/json/);
    assert.equal(res.headers.get("Access-Control-Allow-Origin"), "*");
    assert.equal(res.headers.get("X-RateLimit-Limit"), null, "not metered");
    assert.equal(doc.openapi, "3.1.0");
    assert.equal(doc.info.version, "1.0.0");
    assert.deepEqual(doc.servers.map((s: any) => s.url), [`${PUBLIC_URL}/api/v1`]);
    assert.deepEqual(doc.paths["/healthz"].servers.map((s: any) => s.url), [PUBLIC_URL]);
    assert.deepEqual(doc.paths["/docs"].servers.map((s: any) => s.url), [PUBLIC_URL]);
  });

  test("validates against the OpenAPI 3.1 schema (and a broken copy does not)", async () => {
    const result = await new Validator().validate(structuredClone(doc));
    assert.ok(result.valid, `valid OpenAPI 3.1: ${JSON.stringify(result.errors, null, 1)?.slice(0, 3000)}`);
    const broken = structuredClone(doc);
    broken.paths["/wallet/{address}"].get.responses = { "200": { content: {} } };
    const refused = await new Validator().validate(broken);
    assert.equal(refused.valid, false, "a response without a description is refused");
  });

  test("every route the app serves is in the document, and every documented route is served", () => {
    const served = new Set(server.app.routes.map((r) => `${r.method} ${r.path.replace(/:(\w+)/g, "{$1}")}`));
    const documented = documentRoutes(doc);
    assert.ok(served.size >= 7, `the app reports its routes: ${[...served].join(", ")}`);
    for (const route of served) assert.ok(documented.has(route), `${route} is served but missing from openapi.json`);
    for (const route of documented) assert.ok(served.has(route), `${route} is documented but not served`);
    // the 405 table knows every documented path, and nothing else
    for (const route of documented) {
      const [method, path] = route.split(" ");
      const concrete = path.replace(/\{[^}]+\}/g, "x");
      const known = ROUTES.find((r) => r.pattern.test(concrete));
      assert.ok(known?.methods.includes(method), `ROUTES lists ${route} (for 405)`);
    }
    for (const r of ROUTES) {
      assert.ok([...documented].some((route) => r.pattern.test(route.split(" ")[1].replace(/\{[^}]+\}/g, "x"))), `${r.pattern} is documented`);
    }
  });

  test("authenticated operations name the API-key schemes, their error codes and the rate-limit headers", () => {
    assert.equal(doc.components.securitySchemes.bearerApiKey.type, "http");
    assert.equal(doc.components.securitySchemes.bearerApiKey.scheme, "bearer");
    assert.equal(doc.components.securitySchemes.plainApiKey.in, "header");
    assert.equal(doc.components.securitySchemes.plainApiKey.name, "Authorization");
    const wallet = doc.paths["/wallet/{address}"].get;
    assert.deepEqual(wallet.security, [{ bearerApiKey: [] }, { plainApiKey: [] }]);
    assert.equal(wallet.parameters[0].name, "address");
    assert.equal(wallet.parameters[0].in, "path");
    assert.equal(wallet.parameters[0].schema.pattern, "^0x[0-9a-fA-F]{40}$");
    assert.deepEqual(wallet.responses["400"].content["application/json"].schema.properties.code.enum, ["INVALID_ADDRESS"]);
    for (const status of ["401", "402", "429", "500", "503"]) assert.ok(wallet.responses[status], `wallet documents ${status}`);
    assert.ok(wallet.responses["200"].headers["X-RateLimit-Remaining"]);
    assert.ok(wallet.responses["429"].headers["Retry-After"]);
    const batch = doc.paths["/batch"].post;
    assert.deepEqual(batch.requestBody.content["application/json"].schema.properties.wallets.minItems, 1);
    assert.deepEqual(
      batch.responses["400"].content["application/json"].schema.properties.code.enum.sort(),
      ["BATCH_SIZE_EXCEEDED", "INVALID_ADDRESS", "INVALID_REQUEST"],
    );
    assert.ok(batch.responses["413"]);
    assert.ok(batch.parameters.some((p: any) => p.name === "Idempotency-Key" && p.in === "header"));
    const usage = doc.paths["/usage"].get;
    assert.deepEqual(usage.parameters[0].schema.enum, ["day", "week", "month"]);
    assert.equal(usage.parameters[0].schema.default, "month");
    assert.equal(usage.parameters[0].required, false);
    assert.deepEqual(doc.paths["/healthz"].get.security, [], "healthz is public");
  });

  describe("real responses match the documented schemas", () => {
    let apiKey: string;
    before(async () => {
      ({ apiKey } = await createCustomer(get().db, { packs: [{ pack: "Agent", quantity: 10 }], now: new Date(START) }));
    });

    test("GET /wallet/{address}: found, stale, checked empty, never seen, agent, malformed, no key", async () => {
      const op = operation("lookupWallet");
      for (const address of [W.full, W.stale, W.empty, W.neverSeen, W.agent, W.twoHandles, W.selfDeclared, W.corrected, "0x12"]) {
        assertMatches(op, await expectStatus(await server.request(`/api/v1/wallet/${address}`, { key: apiKey }), address === "0x12" ? 400 : 200, address));
      }
      assertMatches(op, await expectStatus(await server.request(`/api/v1/wallet/${W.full}`), 401));
    });

    test("POST /batch: rows, nulls, invalid bodies and addresses, replay", async () => {
      const op = operation("lookupBatch");
      assertMatches(op, await expectStatus(await server.request("/api/v1/batch", batchInit(apiKey, Object.values(W))), 200));
      assertMatches(op, await expectStatus(await server.request("/api/v1/batch", batchInit(apiKey, [])), 400));
      assertMatches(op, await expectStatus(await server.request("/api/v1/batch", batchInit(apiKey, ["nope"])), 400));
      const idem = { ...batchInit(apiKey, [W.full]), headers: { "Content-Type": "application/json", "Idempotency-Key": "k-1" } };
      assertMatches(op, await expectStatus(await server.request("/api/v1/batch", idem), 200));
      assertMatches(op, await expectStatus(await server.request("/api/v1/batch", idem), 200));
    });

    test("GET /reverse/twitter and /reverse/farcaster: rows, empty, bad handle, bad cursor", async () => {
      const twitter = operation("reverseTwitter");
      for (const [handle, status] of [["alice", 200], ["@Carol_Alt", 200], ["nobody", 200], ["bad-handle", 400]] as const) {
        assertMatches(twitter, await expectStatus(await server.request(`/api/v1/reverse/twitter/${handle}`, { key: apiKey }), status, handle));
      }
      assertMatches(twitter, await expectStatus(await server.request("/api/v1/reverse/twitter/alice?cursor=forged", { key: apiKey }), 400));
      const farcaster = operation("reverseFarcaster");
      for (const [username, status] of [["alice", 200], ["mia", 200], ["-bad", 400]] as const) {
        assertMatches(farcaster, await expectStatus(await server.request(`/api/v1/reverse/farcaster/${username}`, { key: apiKey }), status, username));
      }
    });

    test("POST /estimate: counts, too small, malformed", async () => {
      const op = operation("estimateList");
      const list = [...Object.values(W), "0x00000000000000000000000000000000000000aa"];
      assertMatches(op, await expectStatus(await server.request("/api/v1/estimate", batchInit(apiKey, list)), 200));
      assertMatches(op, await expectStatus(await server.request("/api/v1/estimate", batchInit(apiKey, [W.full])), 400));
      assertMatches(op, await expectStatus(await server.request("/api/v1/estimate", batchInit(apiKey, [...list, "0x1"])), 400));
    });

    test("POST /jobs and GET /jobs/{id}: inline completion, pages, bad paging, unknown id, malformed list", async () => {
      const submit = operation("submitJob");
      const poll = operation("jobStatus");
      const submitted = await expectStatus(await server.request("/api/v1/jobs", batchInit(apiKey, [W.full, W.ensOnly, W.neverSeen, W.empty])), 202);
      assertMatches(submit, submitted);
      const id = submitted.body.data.job_id;
      assertMatches(poll, await expectStatus(await server.request(`/api/v1/jobs/${id}`, { key: apiKey }), 200));
      assertMatches(poll, await expectStatus(await server.request(`/api/v1/jobs/${id}?offset=1&limit=2`, { key: apiKey }), 200));
      assertMatches(poll, await expectStatus(await server.request(`/api/v1/jobs/${id}?limit=5000`, { key: apiKey }), 400));
      assertMatches(poll, await expectStatus(await server.request(`/api/v1/jobs/${crypto.randomUUID()}`, { key: apiKey }), 404));
      assertMatches(poll, await expectStatus(await server.request("/api/v1/jobs/not-a-uuid", { key: apiKey }), 404));
      assertMatches(submit, await expectStatus(await server.request("/api/v1/jobs", batchInit(apiKey, ["0x12"])), 400));
    });

    test("GET /stats and GET /usage, including an invalid period", async () => {
      assertMatches(operation("indexStats"), await expectStatus(await server.request("/api/v1/stats", { key: apiKey }), 200));
      for (const period of ["day", "week", "month"]) {
        assertMatches(operation("accountUsage"), await expectStatus(await server.request(`/api/v1/usage?period=${period}`, { key: apiKey }), 200));
      }
      assertMatches(operation("accountUsage"), await expectStatus(await server.request("/api/v1/usage?period=year", { key: apiKey }), 400));
    });

    test("the public operations", async () => {
      assertMatches(operation("health"), await expectStatus(await server.request("/healthz"), 200));
      assertMatches(operation("openapiDocument"), await expectStatus(await server.request("/api/v1/openapi.json"), 200));
      const page = await expectStatus(await server.request("/docs"), 200);
      assert.match(page.headers.get("Content-Type") ?? "", /text\/html/);
    });
  });
});

describe("GET /healthz when the database is down", () => {
  test("PostgreSQL: 200 while the database answers, 503 SERVICE_UNAVAILABLE with Retry-After once it is gone", async () => {
    const created = await createPostgresDatabase();
    const db = await openDatabase({ databaseUrl: created.url, max: 2 });
    const server = await startServer(db);
    try {
      assert.deepEqual((await expectStatus(await server.request("/healthz"), 200)).body, { status: "ok" });
      await created.drop(); // terminates the server's connections and removes the database
      const res = await expectStatus(await server.request("/healthz"), 503);
      assert.deepEqual(Object.keys(res.body).sort(), ["code", "error"]);
      assert.equal(res.body.code, "SERVICE_UNAVAILABLE");
      assert.match(res.headers.get("Retry-After") ?? "", /^[1-9]\d*$/);
      assert.ok(!res.text.includes("walletid_test_"), `no database detail leaks: ${res.text}`);
    } finally {
      await server.close().catch(() => {});
      await db.close().catch(() => {});
    }
  });

  test("PGlite: 503 once the embedded database is closed", async () => {
    const db = await openDatabase({});
    const server = await startServer(db);
    try {
      await expectStatus(await server.request("/healthz"), 200);
      await db.close();
      const res = await expectStatus(await server.request("/healthz"), 503);
      assert.equal(res.body.code, "SERVICE_UNAVAILABLE");
      assert.match(res.headers.get("Retry-After") ?? "", /^[1-9]\d*$/);
    } finally {
      await server.close().catch(() => {});
    }
  });
});
