// The response examples of the OpenAPI document are real responses: this test sends the request
// example of every JSON operation it can reach in one step to a server holding the fixture index,
// normalises the volatile values (times, ids, keys, cursors), and compares the result with what
// src/openapi/recorded-examples.ts holds. UPDATE_EXAMPLES=1 rewrites that file instead.
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { examplePath, REQUEST_EXAMPLES } from "../src/openapi/examples.ts";
import { OPERATIONS } from "../src/openapi/operations.ts";
import { RECORDED_EXAMPLES } from "../src/openapi/recorded-examples.ts";
import { openTestDatabase, type TestDatabase } from "./support/db.ts";
import { loadFixtures } from "./support/fixtures.ts";
import { ROOT } from "./support/process.ts";
import { createClock, createCustomer, startServer, type TestServer } from "./support/server.ts";

const START = "2026-11-20T12:00:30Z";

/** The JSON operations whose example request answers in one step (others need a flow or a payment). */
const RECORDED = [
  "lookupWallet",
  "lookupBatch",
  "estimateList",
  "reverseTwitter",
  "reverseFarcaster",
  "submitJob",
  "jobStatus",
  "indexStats",
  "accountUsage",
  "listConnections",
  "protectedResourceMetadataMcp",
  "protectedResourceMetadata",
  "authorizationServerMetadata",
  "registerClient",
  "mcp",
  "health",
];

const TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;
const UUIDS = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;

/** The same response every run: times, ids, secrets and cursors replaced by fixed stand-ins. */
function normalise(value: unknown, key = ""): unknown {
  if (Array.isArray(value)) return value.map((v) => normalise(v));
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, normalise(v, k)]));
  }
  if (typeof value === "string") {
    if (TIMESTAMP.test(value)) return "2026-11-20T12:00:30.000Z";
    if (value.replace(UUIDS, "") !== value) return value.replace(UUIDS, "6f1c2a54-3b1e-4e8a-9d2f-0c4b7a1e5d93");
    if (/^wid_[a-z]+_/.test(value)) return `${value.slice(0, value.indexOf("_", 4) + 1)}…`;
    if (/cursor/.test(key)) return "<cursor>";
    if (key === "text") {
      try {
        return JSON.stringify(normalise(JSON.parse(value)));
      } catch {
        return value;
      }
    }
  }
  if (typeof value === "number" && /_at$|issued_at|latency/.test(key)) return 0;
  return value;
}

let database: TestDatabase & { close(): Promise<void> };
let server: TestServer;
let apiKey: string;

before(async () => {
  database = await openTestDatabase("pglite");
  await loadFixtures(database.db, new Date(START));
  server = await startServer(database.db, { clock: createClock(START) });
  ({ apiKey } = await createCustomer(database.db, { packs: [{ pack: "Agent", quantity: 10 }], now: new Date(START) }));
});
after(async () => {
  await server.close();
  await database.close();
});

test("every recorded response example is what the server answers to its request example", async () => {
  const recorded: Record<string, { status: number; body: unknown }> = {};
  let jobId: string | undefined;
  for (const operationId of RECORDED) {
    const op = OPERATIONS.find((o) => o.operationId === operationId)!;
    assert.ok(op, operationId);
    const example = REQUEST_EXAMPLES[operationId];
    assert.ok(example, `${operationId} has a request example`);
    const params = operationId === "jobStatus" ? { ...example.params, id: jobId! } : example.params;
    const path = examplePath(op, { ...example, params });
    const url = `${op.site ? "" : "/api/v1"}${path}`;
    const headers = new Headers(example.headers);
    if (op.auth || op.optionalAuth) headers.set("Authorization", `Bearer ${apiKey}`);
    if (example.body !== undefined) headers.set("Content-Type", "application/json");
    const res = await server.request(url, {
      method: op.method.toUpperCase(),
      headers,
      body: example.body === undefined ? undefined : JSON.stringify(example.body),
    });
    const body = (await res.json()) as { data?: { job_id?: string } };
    if (operationId === "submitJob") jobId = body.data?.job_id;
    assert.ok(res.status < 300, `${operationId}: ${res.status} ${JSON.stringify(body)}`);
    recorded[operationId] = { status: res.status, body: normalise(body) };
  }
  if (process.env.UPDATE_EXAMPLES === "1") {
    const text = [
      "// Written by `UPDATE_EXAMPLES=1 node --import tsx --test test/openapi-examples.test.ts`: real",
      "// responses to the requests of src/openapi/examples.ts, volatile values (times, ids, keys,",
      "// cursors) normalised. Checked by that test without UPDATE_EXAMPLES; do not edit by hand.",
      `export const RECORDED_EXAMPLES: Record<string, { status: number; body: unknown }> = ${JSON.stringify(recorded, null, 2)};`,
      "",
    ].join("\n");
    writeFileSync(join(ROOT, "src/openapi/recorded-examples.ts"), text);
    return;
  }
  for (const operationId of RECORDED) {
    assert.deepEqual(recorded[operationId], RECORDED_EXAMPLES[operationId], `the example of ${operationId} no longer matches the server (rerun with UPDATE_EXAMPLES=1 if the change is intended)`);
  }
});

test("the document carries a curl request example for every operation and the recorded response examples", async () => {
  const doc = (await (await server.request("/api/v1/openapi.json")).json()) as { paths: Record<string, Record<string, any>> };
  let operations = 0;
  for (const item of Object.values(doc.paths)) {
    for (const method of ["get", "post", "delete"]) {
      const op = item[method];
      if (!op) continue;
      operations++;
      const curl = op["x-codeSamples"]?.find((s: { label: string }) => s.label === "curl")?.source as string | undefined;
      assert.match(curl ?? "", new RegExp(`^curl${method === "get" ? "" : ` -X ${method.toUpperCase()}`} 'http`), `${op.operationId} has a curl example`);
      if (RECORDED.includes(op.operationId)) {
        const status = String(RECORDED_EXAMPLES[op.operationId]?.status);
        assert.deepEqual(op.responses[status]?.content?.["application/json"]?.examples?.recorded?.value, RECORDED_EXAMPLES[op.operationId]?.body, `${op.operationId} shows its recorded example`);
      }
    }
  }
  assert.equal(operations, OPERATIONS.length);
  const page = await (await server.request("/docs")).text();
  assert.match(page, /<pre class="curl">curl /);
  assert.match(page, /Example \(a real response, recorded by the test suite\)/);
  assert.match(page, /<section class="schema" id="schema-WalletRecord">/);
  assert.match(page, /nav\{[^}]*position:sticky/);
});
