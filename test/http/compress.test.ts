// Compression and validators through a real listening server, read as raw bytes (node:http, which
// does not decode): large JSON gzipped for clients that accept it, small bodies as they are,
// q-values honoured; ETag, Cache-Control and 304 on the documents and on /stats.
import assert from "node:assert/strict";
import { request as httpRequest } from "node:http";
import { after, before, describe, test } from "node:test";
import { gunzipSync, gzip } from "node:zlib";
import { chooseEncoding, compressResponse } from "../../src/http/compress.ts";
import { openDatabase } from "../../src/db/open.ts";
import { eachDatabase, TEST_TIMEOUTS } from "../support/db.ts";
import { startMainServer, type Running } from "../support/process.ts";
import { createClock, createCustomer, startServer, type TestServer } from "../support/server.ts";
import { address, debitsOf, importIndex } from "../support/http.ts";

const START = "2026-11-20T12:00:30Z";

interface Raw {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

function raw(server: { url: string }, path: string, options: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(server.url + path, { method: options.method ?? "GET", headers: options.headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(options.body);
  });
}

describe("compressResponse with the runtime's gzip (src/main.ts hands zlib's in on Node)", () => {
  test("the same bytes and headers as CompressionStream's gzip; other encodings and small bodies untouched by it", async () => {
    const body = JSON.stringify({ data: Array.from({ length: 300 }, (_, i) => ({ wallet: address(i, "e"), quality_score: i % 100 })) });
    const respond = () => new Response(body, { headers: { "Content-Type": "application/json", "X-Request-Id": "r1" } });
    const req = new Request("http://localhost/api/v1/reverse/twitter/x", { headers: { "Accept-Encoding": "gzip" } });
    let calls = 0;
    const zlibGzip = (bytes: Uint8Array) =>
      new Promise<Uint8Array<ArrayBuffer>>((resolve, reject) =>
        gzip(bytes, (err, out) => (calls++, err ? reject(err) : resolve(out as Uint8Array<ArrayBuffer>))),
      );
    const viaStream = await compressResponse(req, respond());
    const viaRuntime = await compressResponse(req, respond(), { gzip: zlibGzip });
    assert.equal(calls, 1);
    assert.deepEqual([...viaRuntime.headers], [...viaStream.headers]);
    const [a, b] = [Buffer.from(await viaStream.arrayBuffer()), Buffer.from(await viaRuntime.arrayBuffer())];
    assert.ok(a.equals(b), "byte for byte");
    assert.equal(gunzipSync(b).toString(), body);
    assert.equal(viaRuntime.headers.get("Content-Length"), String(b.byteLength));

    const small = await compressResponse(req, new Response("{}", { headers: { "Content-Type": "application/json" } }), { gzip: zlibGzip });
    assert.equal(small.headers.get("Content-Encoding"), null);
    assert.equal(calls, 1, "nothing under the threshold reaches it");
  });
});

describe("chooseEncoding", () => {
  test("q-values, the wildcard, q=0 and the runtime's offer", () => {
    assert.equal(chooseEncoding("gzip, deflate, br", ["gzip"]), "gzip");
    assert.equal(chooseEncoding("gzip, deflate, br", ["br", "gzip"]), "br");
    assert.equal(chooseEncoding("br;q=0.5, gzip;q=0.8", ["br", "gzip"]), "gzip");
    assert.equal(chooseEncoding("gzip;q=0", ["gzip"]), undefined);
    assert.equal(chooseEncoding("*;q=0.3", ["gzip"]), "gzip");
    assert.equal(chooseEncoding("*;q=0.3, gzip;q=0", ["gzip"]), undefined);
    assert.equal(chooseEncoding("identity", ["gzip"]), undefined);
    assert.equal(chooseEncoding("", ["gzip"]), undefined);
    assert.equal(chooseEncoding(null, ["gzip"]), undefined);
    assert.equal(chooseEncoding("GZIP;Q=1", ["gzip"]), "gzip");
  });
});

eachDatabase("compression and validators", (get) => {
  let server: TestServer;
  let key: string;
  let accountId: string;
  const wallets = Array.from({ length: 50 }, (_, i) => address(i + 1, "f"));

  before(async () => {
    server = await startServer(get().db, { clock: createClock(START) });
    await importIndex(
      get().db,
      wallets.slice(0, 20).map((wallet, i) => ({ wallet, kind: "ens", route: "ens-primary", name: `compressed${i}.eth` })),
      new Date(START),
    );
    ({ apiKey: key, accountId } = await createCustomer(get().db, { packs: [{ pack: "Agent" }], now: server.clock.now() }));
  });
  after(async () => {
    await server.close();
  });

  // each batch weighs 50 of the minute's 60 units: every one gets a minute of its own
  const batch = (encoding?: string) =>
    (server.clock.advance(61_000), raw(server, "/api/v1/batch", {
      method: "POST",
      headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json", ...(encoding ? { "Accept-Encoding": encoding } : {}) },
      body: JSON.stringify({ wallets }),
    }));

  test("a batch of 50 comes back gzipped to a client that accepts gzip, and decodes to the same JSON", async () => {
    const plain = await batch();
    assert.equal(plain.status, 200, plain.body.toString());
    assert.equal(plain.headers["content-encoding"], undefined);
    assert.ok(plain.body.length > 1024, `the plain body is over the threshold: ${plain.body.length}`);
    assert.match(String(plain.headers.vary), /Accept-Encoding/);
    assert.ok(plain.headers["x-ratelimit-remaining"] && plain.headers["x-request-id"], `headers kept: ${JSON.stringify(plain.headers)}`);

    const gzipped = await batch("gzip, deflate, br");
    assert.equal(gzipped.status, 200);
    assert.equal(gzipped.headers["content-encoding"], "gzip");
    assert.match(String(gzipped.headers.vary), /Accept-Encoding/);
    assert.equal(Number(gzipped.headers["content-length"]), gzipped.body.length);
    assert.ok(gzipped.body.length < plain.body.length / 3, `gzip shrinks it: ${gzipped.body.length} of ${plain.body.length}`);
    const decoded = JSON.parse(gunzipSync(gzipped.body).toString());
    assert.deepEqual(decoded, JSON.parse(plain.body.toString()));
    // the rate-limit headers survive compression, and nothing here bills (ens only)
    assert.ok(gzipped.headers["x-ratelimit-remaining"], `rate headers kept: ${JSON.stringify(gzipped.headers)} / ${JSON.stringify(plain.headers)}`);
    assert.deepEqual(await debitsOf(get().db, accountId), []);

    const refused = await batch("gzip;q=0, identity");
    assert.equal(refused.headers["content-encoding"], undefined, "q=0 refuses gzip");
    assert.deepEqual(JSON.parse(refused.body.toString()), JSON.parse(plain.body.toString()));
  });

  test("a body under 1 KiB goes out uncompressed, even to a client that accepts gzip", async () => {
    const res = await raw(server, `/api/v1/wallet/${wallets[0]}`, { headers: { Authorization: `Bearer ${key}`, "Accept-Encoding": "gzip" } });
    assert.equal(res.status, 200);
    assert.ok(res.body.length < 1024, `small: ${res.body.length}`);
    assert.equal(res.headers["content-encoding"], undefined);
    assert.match(res.body.toString(), /compressed0\.eth/);
    assert.ok(res.headers["x-ratelimit-remaining"] && res.headers["x-request-id"] && res.headers["access-control-allow-origin"], `headers kept: ${JSON.stringify(res.headers)}`);
    const health = await raw(server, "/healthz", { headers: { "Accept-Encoding": "gzip" } });
    assert.equal(health.headers["content-encoding"], undefined);
  });

  test("the OpenAPI document and /docs: ETag, Cache-Control and 304 on If-None-Match (strong, weak, lists, *)", async () => {
    for (const path of ["/api/v1/openapi.json", "/docs"]) {
      const first = await raw(server, path);
      assert.equal(first.status, 200);
      const tag = String(first.headers.etag);
      assert.match(tag, /^"[^"]+"$/, `${path} has a strong ETag`);
      assert.equal(first.headers["cache-control"], "public, max-age=300");
      for (const ifNoneMatch of [tag, `W/${tag}`, `"other", ${tag}`, "*"]) {
        const again = await raw(server, path, { headers: { "If-None-Match": ifNoneMatch } });
        assert.equal(again.status, 304, `${path} with If-None-Match: ${ifNoneMatch}`);
        assert.equal(again.body.length, 0);
        assert.equal(again.headers.etag, tag);
        assert.equal(again.headers["cache-control"], "public, max-age=300");
      }
      const changed = await raw(server, path, { headers: { "If-None-Match": '"not-this-one"' } });
      assert.equal(changed.status, 200);
      // compressed, the validator is weak, and still matches
      const gzipped = await raw(server, path, { headers: { "Accept-Encoding": "gzip" } });
      assert.equal(gzipped.headers["content-encoding"], "gzip");
      assert.equal(gzipped.headers.etag, `W/${tag}`);
      const revalidated = await raw(server, path, { headers: { "Accept-Encoding": "gzip", "If-None-Match": String(gzipped.headers.etag) } });
      assert.equal(revalidated.status, 304);
    }
  });

  test("/stats: the ETag names the stored snapshot, so a later call revalidates to 304 until the next snapshot", async () => {
    const headers = { Authorization: `Bearer ${key}` };
    const first = await raw(server, "/api/v1/stats", { headers });
    assert.equal(first.status, 200, first.body.toString());
    assert.equal(first.headers["cache-control"], "private, no-cache");
    const tag = String(first.headers.etag);
    assert.match(tag, /^"stats-[0-9a-z]+"$/);
    server.clock.advance(60_000);
    const again = await raw(server, "/api/v1/stats", { headers: { ...headers, "If-None-Match": tag } });
    assert.equal(again.status, 304);
    assert.equal(again.body.length, 0);
    assert.equal(again.headers.etag, tag);
    const unauthenticated = await raw(server, "/api/v1/stats", { headers: { "If-None-Match": tag } });
    assert.equal(unauthenticated.status, 401, "a validator does not stand in for a key");
  });
});

// npm start's server hands compressResponse zlib's gzip (src/main.ts): bodies up to 64 KiB are
// deflated on the event loop, larger ones in the thread pool. Both come out whole.
describe("npm start's server (Node): gzip on both sides of the 64 KiB it deflates on the event loop", () => {
  let server: Running;
  let stop: () => Promise<void>;
  let key: string;
  const wallets = Array.from({ length: 20 }, (_, i) => address(i + 1, "e"));

  before(async () => {
    let databaseUrl: string;
    ({ server, databaseUrl, stop } = await startMainServer());
    const db = await openDatabase({ databaseUrl, max: 2, timeouts: TEST_TIMEOUTS });
    try {
      await importIndex(
        db,
        wallets.map((wallet, i) => ({ wallet, kind: "ens", route: "ens-primary", name: `zipped${i}.eth` })),
        new Date(),
      );
      ({ apiKey: key } = await createCustomer(db, { packs: [{ pack: "Agent" }], now: new Date() }));
    } finally {
      await db.close();
    }
  });
  after(async () => {
    await stop?.();
  });

  const same = async (path: string, init: { method?: string; headers?: Record<string, string>; body?: string }, size: (n: number) => boolean) => {
    const plain = await raw(server, path, init);
    assert.equal(plain.status, 200, plain.body.toString().slice(0, 300));
    assert.equal(plain.headers["content-encoding"], undefined);
    assert.ok(size(plain.body.length), `${path}: ${plain.body.length} bytes is not on the side of 64 KiB this test is for`);
    const gzipped = await raw(server, path, { ...init, headers: { ...init.headers, "Accept-Encoding": "gzip" } });
    assert.equal(gzipped.status, 200);
    assert.equal(gzipped.headers["content-encoding"], "gzip");
    assert.equal(Number(gzipped.headers["content-length"]), gzipped.body.length);
    assert.ok(gzipped.body.length < plain.body.length / 2, `${path}: gzip shrinks it (${gzipped.body.length} of ${plain.body.length})`);
    return { plain: JSON.parse(plain.body.toString()), decoded: JSON.parse(gunzipSync(gzipped.body).toString()) };
  };

  test("a batch of 20 (between 1 and 64 KiB) decodes to the JSON sent to a client without gzip", async () => {
    const init = {
      method: "POST",
      headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
      body: JSON.stringify({ wallets }),
    };
    const { plain, decoded } = await same("/api/v1/batch", init, (n) => n > 1024 && n <= 64 * 1024);
    assert.equal(decoded.data.length, 20);
    assert.deepEqual(
      decoded.data.map((r: { wallet: string }) => r.wallet),
      plain.data.map((r: { wallet: string }) => r.wallet),
    );
    assert.deepEqual(decoded.data, plain.data);
  });

  test("the OpenAPI document (over 64 KiB) decodes to the JSON sent to a client without gzip", async () => {
    const { plain, decoded } = await same("/api/v1/openapi.json", {}, (n) => n > 64 * 1024);
    assert.deepEqual(decoded, plain);
  });
});
