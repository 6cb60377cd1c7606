// HEAD never bills: on every metered or account path it is 405 with Allow, free, before any
// metering; on the public documents it answers like GET without a body. Every path the app
// serves is tried, so a route added later cannot be forgotten.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { allowOf, ROUTES } from "../../src/app.ts";
import { eachDatabase } from "../support/db.ts";
import { createClock, createCustomer, startServer, type TestServer } from "../support/server.ts";
import { address, assertErrorBody, debitsOf, expectStatus, importIndex, rateWindowOf, usageCountsOf } from "../support/http.ts";

const START = "2026-11-20T12:00:30Z";
const BILL = address(7, "b");
const HANDLE = "headcase";

/** A concrete path for a hono route template, aimed at a wallet and a handle that would bill. */
function concrete(template: string): string {
  return template
    .replace(":address", BILL)
    .replace(/:platform(\{[^}]*\})?/, "twitter")
    .replace(":handle", HANDLE)
    .replace(/:[a-zA-Z_]+(\{[^}]*\})?/g, "00000000-0000-0000-0000-000000000000");
}

eachDatabase("HEAD", (get) => {
  let server: TestServer;

  before(async () => {
    server = await startServer(get().db, { clock: createClock(START) });
    await importIndex(get().db, [{ wallet: BILL, kind: "twitter", route: "x-signin", handle: HANDLE }], new Date(START));
  });
  after(async () => {
    await server.close();
  });

  test("a GET of the wallet bills (so HEAD not billing below means something)", async () => {
    const c = await createCustomer(get().db, { packs: [{ pack: "Agent" }], now: server.clock.now() });
    const res = await expectStatus(await server.request(`/api/v1/wallet/${BILL}`, { key: c.apiKey }), 200);
    assert.equal(res.body.data?.twitter?.handle, HANDLE, res.text);
    assert.equal((await debitsOf(get().db, c.accountId)).length, 1, "the GET debited one match");
  });

  test("HEAD on every served path: 405 with Allow on metered and account paths, GET without a body on public ones; nothing billed or counted", async () => {
    const c = await createCustomer(get().db, { packs: [{ pack: "Agent" }], now: server.clock.now() });
    const paths = new Set(server.app.routes.map((r) => concrete(r.path)));
    assert.ok(paths.has(`/api/v1/wallet/${BILL}`) && paths.has(`/api/v1/reverse/twitter/${HANDLE}`), [...paths].join(", "));
    let publicSeen = 0;
    for (const path of paths) {
      const route = ROUTES.find((r) => r.pattern.test(path));
      assert.ok(route, `ROUTES lists ${path}`);
      for (const headers of [{ Authorization: `Bearer ${c.apiKey}` }, {}] as Array<Record<string, string>>) {
        const res = await server.request(path, { method: "HEAD", headers });
        const text = await res.text();
        assert.equal(text, "", `no body on HEAD ${path}`);
        if (route.head) {
          publicSeen++;
          const get = await server.request(path);
          await get.arrayBuffer();
          assert.equal(res.status, get.status, `HEAD ${path} answers as GET does`);
          assert.equal(res.headers.get("content-type"), get.headers.get("content-type"), `HEAD ${path} has GET's Content-Type`);
        } else {
          assert.equal(res.status, 405, `HEAD ${path}`);
          assert.equal(res.headers.get("Allow"), allowOf(route), `Allow of ${path}`);
          assert.ok(!res.headers.get("Allow")!.includes("HEAD"), `Allow of ${path} does not name HEAD`);
          assert.equal(res.headers.get("X-RateLimit-Remaining"), null, `HEAD ${path} is not metered`);
        }
      }
    }
    assert.ok(publicSeen >= 6, `the public documents were tried: ${publicSeen}`);
    assert.deepEqual(await debitsOf(get().db, c.accountId), [], "HEAD debited nothing");
    assert.equal(await rateWindowOf(get().db, c.accountId), undefined, "HEAD spent no rate units");
    await server.app.close(); // flushes buffered usage events
    assert.deepEqual(await usageCountsOf(get().db, c.accountId), [], "HEAD is not in usage");
  });

  test("a 405 to HEAD is the usual error body to a GET-less client, and the 405 of another method names HEAD only where it is served", async () => {
    const wrong = await expectStatus(await server.request("/api/v1/stats", { method: "DELETE" }), 405);
    assertErrorBody(wrong, "METHOD_NOT_ALLOWED");
    assert.equal(wrong.headers.get("Allow"), "GET, OPTIONS");
    const docs = await expectStatus(await server.request("/docs", { method: "DELETE" }), 405);
    assert.equal(docs.headers.get("Allow"), "GET, HEAD, OPTIONS");
    const unknown = await server.request("/api/v1/nope", { method: "HEAD" });
    assert.equal(unknown.status, 404);
  });
});

test("the OpenAPI document lists HEAD exactly where it is served", async () => {
  const { createApp } = await import("../../src/app.ts");
  const { readConfig } = await import("../../src/config.ts");
  const { openTestDatabase } = await import("../support/db.ts");
  const db = await openTestDatabase("pglite");
  try {
    const app = createApp({ db: db.db, config: readConfig({}) });
    const doc = (await (await app.fetch(new Request("http://localhost/api/v1/openapi.json"))).json()) as {
      paths: Record<string, Record<string, unknown> & { servers?: unknown }>;
    };
    const documented = Object.entries(doc.paths)
      .filter(([, item]) => "head" in item)
      .map(([path, item]) => (item.servers ? path : `/api/v1${path}`))
      .sort();
    const served = documented.filter((path) => ROUTES.find((r) => r.pattern.test(path))?.head);
    assert.deepEqual(served, documented, "every documented HEAD is served");
    assert.equal(documented.length, ROUTES.filter((r) => r.head).length + 1, `one HEAD per public document (two protected-resource paths share a pattern): ${documented.join(", ")}`);
    await app.close();
  } finally {
    await db.close();
  }
});
