// Conventions every endpoint shares, through a real listening server: CORS and OPTIONS, 404 and
// 405, the Authorization forms and 401s, errors that never leak SQL or stacks, and how API keys
// are stored, capped and stamped.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { createApiKey } from "../../src/ledger/keys.ts";
import { eachDatabase } from "../support/db.ts";
import { failingDb } from "../support/failing-db.ts";
import { createClock, createCustomer, startServer, type TestServer } from "../support/server.ts";
import { address, assertErrorBody, batchInit, debitsOf, expectStatus, importIndex, rateWindowOf } from "../support/http.ts";

const START = "2026-11-20T12:00:30Z";
const BILL = address(1, "b");
const UNKNOWN = address(1, "c");

const KNOWN_PATHS = [`/api/v1/wallet/${UNKNOWN}`, "/api/v1/batch", "/api/v1/stats", "/api/v1/usage", "/healthz", "/api/v1/openapi.json", "/docs"];
const UNKNOWN_PATHS = ["/", "/api/v1/nope", "/api/v2/wallet/" + UNKNOWN, "/api/v1/wallet/" + UNKNOWN + "/extra", "/some/where"];

function allowOf(res: { headers: Headers }): string[] {
  return (res.headers.get("Allow") ?? "").split(",").map((m) => m.trim()).filter(Boolean).sort();
}

function sqlError(): Error {
  const err = new Error(
    'syntax error at or near "SELECT": SELECT * FROM meter_call($1, $2, $3, $4, $5, $6, $7::text[], $8) WHERE api_keys.key_hash = \'deadbeef\'',
  );
  Object.assign(err, { code: "42601", severity: "ERROR", query: "SELECT * FROM meter_call($1)" });
  return err;
}

function connectionError(): Error {
  return Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), {
    code: "ECONNREFUSED",
    address: "127.0.0.1",
    port: 5432,
  });
}

function assertNoLeak(text: string): void {
  for (const fragment of ["SELECT", "meter_call", "syntax", "api_keys", "deadbeef", "ECONNREFUSED", "5432", "127.0.0.1", "node_modules", ".ts:"]) {
    assert.ok(!text.includes(fragment), `the error body leaks ${JSON.stringify(fragment)}: ${text}`);
  }
  assert.ok(!/\n\s*at /.test(text) && !/\bat [\w.<>]+ \(/.test(text), `the error body leaks a stack: ${text}`);
}

eachDatabase("conventions", (get) => {
  let server: TestServer;

  before(async () => {
    server = await startServer(get().db, { clock: createClock(START) });
    await importIndex(get().db, [{ wallet: BILL, kind: "twitter", route: "x-signin", handle: "conv" }], new Date(START));
  });
  after(async () => {
    await server.close();
  });

  describe("CORS, 404 and 405", () => {
    test("OPTIONS on every path, known or not, is 204 with Access-Control-Allow-Origin *", async () => {
      for (const path of [...KNOWN_PATHS, ...UNKNOWN_PATHS]) {
        const res = await expectStatus(
          await server.request(path, {
            method: "OPTIONS",
            headers: {
              Origin: "https://app.example.com",
              "Access-Control-Request-Method": "POST",
              "Access-Control-Request-Headers": "authorization, content-type",
            },
          }),
          204,
          `OPTIONS ${path}`,
        );
        assert.equal(res.text, "", `no body on 204 for ${path}`);
        assert.equal(res.headers.get("Access-Control-Allow-Origin"), "*", path);
        assert.match(res.headers.get("Access-Control-Allow-Methods") ?? "", /GET/, path);
        assert.match(res.headers.get("Access-Control-Allow-Methods") ?? "", /POST/, path);
        assert.match((res.headers.get("Access-Control-Allow-Headers") ?? "").toLowerCase(), /authorization/, path);
      }
      // a bare OPTIONS without preflight headers too
      const bare = await expectStatus(await server.request("/api/v1/usage", { method: "OPTIONS" }), 204);
      assert.equal(bare.headers.get("Access-Control-Allow-Origin"), "*");
    });

    test("normal responses carry Access-Control-Allow-Origin * and expose the rate-limit headers", async () => {
      server.clock.set(START);
      const c = await createCustomer(get().db, { packs: [{ pack: "Agent" }], now: server.clock.now() });
      const cases: Array<[string, RequestInit & { key?: string }, number]> = [
        ["/api/v1/usage", { key: c.apiKey }, 200],
        [`/api/v1/wallet/${UNKNOWN}`, { key: c.apiKey }, 200],
        ["/api/v1/wallet/0x12", { key: c.apiKey }, 400],
        ["/api/v1/batch", batchInit(c.apiKey, [UNKNOWN]), 200],
        ["/api/v1/stats", {}, 401],
        ["/api/v1/nope", {}, 404],
        ["/api/v1/batch", { method: "GET" }, 405],
        ["/healthz", {}, 200],
      ];
      for (const [path, init, status] of cases) {
        const res = await expectStatus(await server.request(path, { ...init, headers: { ...init.headers, Origin: "https://x.example" } }), status, path);
        assert.equal(res.headers.get("Access-Control-Allow-Origin"), "*", `${path}: ${res.text}`);
      }
      const res = await server.request("/api/v1/usage", { key: c.apiKey });
      await res.arrayBuffer();
      const exposed = (res.headers.get("Access-Control-Expose-Headers") ?? "").toLowerCase();
      for (const name of ["x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset", "retry-after"]) {
        assert.ok(exposed.includes(name), `${name} is exposed to browsers: ${exposed}`);
      }
    });

    test("an unknown route is 404 NOT_FOUND", async () => {
      for (const path of UNKNOWN_PATHS) {
        for (const method of ["GET", "POST"]) {
          const res = await expectStatus(await server.request(path, { method }), 404, `${method} ${path}`);
          assertErrorBody(res, "NOT_FOUND");
        }
      }
    });

    test("a wrong method on a known route is 405 METHOD_NOT_ALLOWED with Allow", async () => {
      const cases: Array<[string, string, string]> = [
        [`/api/v1/wallet/${UNKNOWN}`, "POST", "GET"],
        [`/api/v1/wallet/${UNKNOWN}`, "DELETE", "GET"],
        ["/api/v1/batch", "GET", "POST"],
        ["/api/v1/batch", "PUT", "POST"],
        ["/api/v1/stats", "DELETE", "GET"],
        ["/api/v1/usage", "POST", "GET"],
        ["/healthz", "POST", "GET"],
        ["/api/v1/openapi.json", "POST", "GET"],
        ["/docs", "DELETE", "GET"],
      ];
      for (const [path, method, allowed] of cases) {
        const res = await expectStatus(await server.request(path, { method }), 405, `${method} ${path}`);
        assertErrorBody(res, "METHOD_NOT_ALLOWED");
        const allow = allowOf(res);
        assert.ok(allow.includes(allowed), `Allow names ${allowed} for ${path}: ${res.headers.get("Allow")}`);
        assert.ok(!allow.includes(method), `Allow does not name ${method} for ${path}: ${res.headers.get("Allow")}`);
      }
    });
  });

  describe("authentication", () => {
    test("both Authorization forms work: Bearer (any case) and the bare key", async () => {
      server.clock.set(START);
      const c = await createCustomer(get().db, { packs: [{ pack: "Agent" }], now: server.clock.now() });
      const forms = [`Bearer ${c.apiKey}`, c.apiKey, `bearer ${c.apiKey}`, `BEARER ${c.apiKey}`, `  Bearer   ${c.apiKey}  `];
      for (const authorization of forms) {
        for (const path of ["/api/v1/usage", `/api/v1/wallet/${UNKNOWN}`]) {
          const res = await expectStatus(
            await server.request(path, { headers: { Authorization: authorization } }),
            200,
            `${path} with Authorization: ${JSON.stringify(authorization.replace(c.apiKey, "<key>"))}`,
          );
          assert.ok(res.headers.has("X-RateLimit-Limit"), res.text);
        }
      }
      assert.equal((await rateWindowOf(get().db, c.accountId))?.minute_used, forms.length);
    });

    test("a wrong, malformed or revoked key is 401 UNAUTHORIZED and counts nothing", async () => {
      server.clock.set(START);
      const c = await createCustomer(get().db, { packs: [{ pack: "Agent" }], now: server.clock.now() });
      const bad = [
        `Bearer wid_live_${"A".repeat(32)}`, // right shape, no such key
        `Bearer ${c.apiKey.slice(0, -1)}`, // one character short
        `Bearer ${c.apiKey}x`, // one character long
        `Bearer ${c.apiKey.replace("wid_live_", "wid_test_")}`,
        `Bearer ${c.apiKey.toUpperCase()}`,
        "Bearer",
        "Bearer ",
        `Basic ${Buffer.from(`user:${c.apiKey}`).toString("base64")}`,
        `Token ${c.apiKey}`,
      ];
      for (const authorization of bad) {
        for (const path of ["/api/v1/usage", `/api/v1/wallet/${BILL}`, "/api/v1/stats"]) {
          const res = await expectStatus(await server.request(path, { headers: { Authorization: authorization } }), 401, `${path} with ${authorization}`);
          assertErrorBody(res, "UNAUTHORIZED");
          assert.match(res.headers.get("WWW-Authenticate") ?? "", /^Bearer realm="walletid"/, `challenge on ${path} with ${authorization}`);
        }
        const batch = await expectStatus(
          await server.request("/api/v1/batch", { ...batchInit("", [BILL]), headers: { "Content-Type": "application/json", Authorization: authorization } }),
          401,
          `batch with ${authorization}`,
        );
        assertErrorBody(batch, "UNAUTHORIZED");
      }
      const missing = await expectStatus(await server.request(`/api/v1/wallet/${BILL}`), 401);
      assertErrorBody(missing, "UNAUTHORIZED");
      // RFC 6750: no error code when the request carried no credential
      assert.equal(missing.headers.get("WWW-Authenticate"), 'Bearer realm="walletid"');

      await expectStatus(await server.request(`/api/v1/wallet/${BILL}`, { key: c.apiKey }), 200);
      await get().db.query("UPDATE api_keys SET revoked_at = $2 WHERE id = $1", [c.keyId, server.clock.now()]);
      for (const path of ["/api/v1/usage", `/api/v1/wallet/${BILL}`, "/api/v1/stats"]) {
        const res = await expectStatus(await server.request(path, { key: c.apiKey }), 401, `revoked key on ${path}`);
        assertErrorBody(res, "UNAUTHORIZED");
        assert.equal(res.headers.get("X-RateLimit-Limit"), null, res.text);
        assert.match(res.headers.get("WWW-Authenticate") ?? "", /^Bearer realm="walletid", error="invalid_token"/, `challenge of a revoked key on ${path}`);
      }
      const revokedBatch = await expectStatus(await server.request("/api/v1/batch", batchInit(c.apiKey, [BILL])), 401);
      assertErrorBody(revokedBatch, "UNAUTHORIZED");

      // only the one call made with the good key counted and billed
      assert.equal((await debitsOf(get().db, c.accountId)).length, 1);
      assert.equal((await rateWindowOf(get().db, c.accountId))?.minute_used, 1);
    });
  });

  describe("API keys", () => {
    test("only the SHA-256 of a key is stored", async () => {
      server.clock.set(START);
      const c = await createCustomer(get().db, { now: server.clock.now() });
      const [row] = await get().db.query<{ key_hash: string; prefix: string; whole: string }>(
        "SELECT key_hash, prefix, row_to_json(k)::text AS whole FROM api_keys k WHERE id = $1",
        [c.keyId],
      );
      assert.match(c.apiKey, /^wid_live_[A-Za-z0-9]{32}$/);
      assert.equal(row.key_hash, createHash("sha256").update(c.apiKey).digest("hex"));
      assert.equal(row.prefix, c.apiKey.slice(0, 12));
      const secret = c.apiKey.slice("wid_live_".length);
      const everywhere = await get().db.query<{ whole: string }>("SELECT row_to_json(k)::text AS whole FROM api_keys k");
      for (const { whole } of everywhere) {
        assert.ok(!whole.includes(c.apiKey) && !whole.includes(secret), `the plaintext key is not stored: ${whole}`);
      }
      assert.ok(row.whole.includes(row.key_hash));
    });

    test("at most 10 active keys per account; revoking one allows another", async () => {
      server.clock.set(START);
      const c = await createCustomer(get().db, { packs: [{ pack: "Agent" }], now: server.clock.now() });
      const keys: Array<{ apiKey: string; keyId: string }> = [{ apiKey: c.apiKey, keyId: c.keyId }];
      for (let i = 2; i <= 10; i++) {
        const created = await createApiKey(get().db, { accountId: c.accountId, name: `key ${i}`, now: server.clock.now() });
        assert.ok(created.ok, `key ${i}: ${JSON.stringify(created)}`);
        keys.push({ apiKey: created.apiKey, keyId: created.keyId });
      }
      const eleventh = await createApiKey(get().db, { accountId: c.accountId, name: "key 11", now: server.clock.now() });
      assert.deepEqual(eleventh, { ok: false, code: "KEY_CAP_REACHED" });

      const active = async () =>
        (await get().db.query<{ n: number }>(
          "SELECT count(*)::integer AS n FROM api_keys WHERE account_id = $1 AND revoked_at IS NULL",
          [c.accountId],
        ))[0].n;
      assert.equal(await active(), 10);
      // every one of the ten works, on the same account
      for (const k of [keys[0], keys[5], keys[9]]) {
        const res = await expectStatus(await server.request("/api/v1/usage", { key: k.apiKey }), 200);
        assert.equal(res.body.data.key.id, k.keyId, res.text);
      }

      await get().db.query("UPDATE api_keys SET revoked_at = $2 WHERE id = $1", [keys[3].keyId, server.clock.now()]);
      assert.equal(await active(), 9);
      const replacement = await createApiKey(get().db, { accountId: c.accountId, name: "replacement", now: server.clock.now() });
      assert.ok(replacement.ok, JSON.stringify(replacement));
      assert.equal(await active(), 10);
      const twelfth = await createApiKey(get().db, { accountId: c.accountId, now: server.clock.now() });
      assert.deepEqual(twelfth, { ok: false, code: "KEY_CAP_REACHED" });

      await expectStatus(await server.request("/api/v1/usage", { key: keys[3].apiKey }), 401);
      const res = await expectStatus(await server.request("/api/v1/usage", { key: replacement.apiKey }), 200);
      assert.equal(res.body.data.key.name, "replacement", res.text);
    });

    test("last_used_at is set after a call", async () => {
      server.clock.set(START);
      const c = await createCustomer(get().db, { packs: [{ pack: "Agent" }], now: server.clock.now() });
      const lastUsed = async () =>
        (await get().db.query<{ last_used_at: Date | null }>("SELECT last_used_at FROM api_keys WHERE id = $1", [c.keyId]))[0]
          .last_used_at;
      assert.equal(await lastUsed(), null, "a key never used has no last_used_at");

      server.clock.set("2026-11-20T12:30:00Z");
      await expectStatus(await server.request(`/api/v1/wallet/${UNKNOWN}`, { key: c.apiKey }), 200);
      assert.equal((await lastUsed())?.toISOString(), "2026-11-20T12:30:00.000Z");

      server.clock.set("2026-11-20T15:45:10Z");
      await expectStatus(await server.request("/api/v1/stats", { key: c.apiKey }), 200);
      assert.equal((await lastUsed())?.toISOString(), "2026-11-20T15:45:10.000Z", "free calls are uses too");
      const usage = await expectStatus(await server.request("/api/v1/usage", { key: c.apiKey }), 200);
      assert.equal(usage.body.data.key.last_used_at, "2026-11-20T15:45:10.000Z", usage.text);

      // a key refused as revoked is not stamped
      const other = await createApiKey(get().db, { accountId: c.accountId, now: server.clock.now() });
      assert.ok(other.ok);
      await get().db.query("UPDATE api_keys SET revoked_at = $2 WHERE id = $1", [other.keyId, server.clock.now()]);
      server.clock.set("2026-11-20T16:00:00Z");
      await expectStatus(await server.request("/api/v1/usage", { key: other.apiKey }), 401);
      const [otherRow] = await get().db.query<{ last_used_at: Date | null }>("SELECT last_used_at FROM api_keys WHERE id = $1", [other.keyId]);
      assert.equal(otherRow.last_used_at, null);
    });
  });

  describe("database failures", () => {
    let failing: TestServer;
    let fail: (() => Error) | undefined;
    let apiKey: string;

    before(async () => {
      const c = await createCustomer(get().db, { packs: [{ pack: "Agent" }], now: new Date(START) });
      apiKey = c.apiKey;
      failing = await startServer(failingDb(get().db, () => fail?.()), { clock: createClock(START) });
    });
    after(async () => {
      fail = undefined;
      await failing.close();
    });

    function requests(): Array<[string, RequestInit & { key?: string }]> {
      return [
        [`/api/v1/wallet/${BILL}`, { key: apiKey }],
        ["/api/v1/batch", batchInit(apiKey, [BILL, UNKNOWN])],
        ["/api/v1/usage", { key: apiKey }],
        ["/api/v1/stats", { key: apiKey }],
        ["/healthz", {}],
      ];
    }

    test("the wrapper passes through while nothing fails", async () => {
      fail = undefined;
      await expectStatus(await failing.request(`/api/v1/wallet/${BILL}`, { key: apiKey }), 200);
      await expectStatus(await failing.request("/healthz"), 200);
    });

    test("a failing statement is 500 INTERNAL_ERROR with a generic message: no SQL, no stack", async () => {
      fail = sqlError;
      // /healthz reports any failure to run its statement as the database being down
      const health = await expectStatus(await failing.request("/healthz"), 503);
      assertErrorBody(health, "SERVICE_UNAVAILABLE");
      assertNoLeak(health.text);
      for (const [path, init] of requests().filter(([p]) => p !== "/healthz")) {
        const res = await expectStatus(await failing.request(path, init), 500, path);
        assertErrorBody(res, "INTERNAL_ERROR");
        assertNoLeak(res.text);
        assert.equal(res.headers.get("Access-Control-Allow-Origin"), "*", path);
        assert.match(res.headers.get("Content-Type") ?? "", /application\/json/, path);
      }
      fail = undefined;
    });

    test("a refused connection is 503 SERVICE_UNAVAILABLE with Retry-After", async () => {
      fail = connectionError;
      for (const [path, init] of requests()) {
        const res = await expectStatus(await failing.request(path, init), 503, path);
        assertErrorBody(res, "SERVICE_UNAVAILABLE");
        assertNoLeak(res.text);
        const retryAfter = res.headers.get("Retry-After");
        assert.match(retryAfter ?? "", /^[1-9]\d*$/, `Retry-After is a positive number of seconds on ${path}: ${retryAfter}`);
      }
      fail = undefined;
      // and the service answers again once the database is back
      await expectStatus(await failing.request("/api/v1/usage", { key: apiKey }), 200);
    });
  });
});
