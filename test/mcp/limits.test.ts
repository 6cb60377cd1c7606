// The MCP endpoint's edges through a real listening server: credentials (none, mistyped, OAuth
// tokens through the verifier seam), tool errors for credits and rate limits, the hourly limits of
// non-tool methods for both kinds of caller (TRUST_PROXY), malformed JSON-RPC, DNS rebinding.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { createApiKey, sha256Hex } from "../../src/ledger/keys.ts";
import type { AccessTokenVerdict } from "../../src/mcp/credentials.ts";
import { eachDatabase } from "../support/db.ts";
import { loadFixtures, W } from "../support/fixtures.ts";
import { debitsOf, setRateWindow } from "../support/http.ts";
import { createClock, createCustomer, startServer, type TestServer } from "../support/server.ts";
import { connect, rpc } from "./support.ts";

const START = "2026-11-20T12:00:30Z";
const INITIALIZE = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "raw", version: "0" } },
};
const LIST = { jsonrpc: "2.0", id: 2, method: "tools/list", params: {} };
const CALL = (name: string, args: Record<string, unknown>) => ({ jsonrpc: "2.0", id: 3, method: "tools/call", params: { name, arguments: args } });

async function body(res: Response): Promise<any> {
  const text = await res.text();
  try {
    return JSON.parse(text);
  } catch {
    throw new Error(`Expected JSON from ${res.status}: ${text.slice(0, 300)}`);
  }
}

eachDatabase("MCP credentials, tool errors and hourly limits", (get) => {
  const clock = createClock(START);
  let server: TestServer;
  let proxied: TestServer;
  let paid: { accountId: string; apiKey: string; keyId: string };
  let broke: { accountId: string; apiKey: string };
  const verdicts = new Map<string, AccessTokenVerdict>();
  let verifierDown = false;

  before(async () => {
    const { db } = get();
    await loadFixtures(db, clock.now());
    paid = await createCustomer(db, { packs: [{ pack: "Agent", quantity: 2 }], now: clock.now() });
    broke = await createCustomer(db, { now: clock.now() });
    const verifyAccessToken = async (token: string) => {
      if (verifierDown) throw new Error("token store unreachable");
      return verdicts.get(token) ?? { ok: false as const };
    };
    server = await startServer(db, { clock, app: { verifyAccessToken } });
    proxied = await startServer(db, { clock, env: { TRUST_PROXY: "1" } });
  });
  after(async () => {
    await server.close();
    await proxied.close();
  });

  const hourlyCount = async (subject: string) =>
    (await get().db.query<{ count: number }>("SELECT count FROM mcp_hourly_requests WHERE subject = $1", [subject]))[0]?.count ?? 0;
  const setHourly = (subject: string, count: number) =>
    get().db.query(
      `INSERT INTO mcp_hourly_requests (subject, hour, count) VALUES ($1, $2, $3)
       ON CONFLICT (subject, hour) DO UPDATE SET count = EXCLUDED.count`,
      [subject, new Date("2026-11-20T12:00:00Z"), count],
    );

  describe("credentials", () => {
    test("no credential: connect and list the tools", async () => {
      const client = await connect("v1", server.url);
      assert.equal((await client.listTools()).tools.length, 10);
      await client.close();
    });

    test("no credential on tools/call: 401 with WWW-Authenticate naming the resource metadata", async () => {
      const res = await rpc(server.url, CALL("walletid_index_stats", {}));
      assert.equal(res.status, 401);
      assert.equal(
        res.headers.get("WWW-Authenticate"),
        `Bearer resource_metadata="${server.config.publicUrl}/.well-known/oauth-protected-resource/mcp"`,
      );
      assert.equal((await body(res)).jsonrpc, "2.0");
    });

    test("a wid_mcp_ token that does not verify: 401 on every method, initialize included", async () => {
      for (const message of [INITIALIZE, LIST, CALL("walletid_index_stats", {})]) {
        const res = await rpc(server.url, message, { Authorization: `Bearer wid_mcp_${"x".repeat(43)}` });
        assert.equal(res.status, 401, String(message.method));
        assert.match(res.headers.get("WWW-Authenticate") ?? "", /^Bearer resource_metadata="[^"]+\/\.well-known\/oauth-protected-resource\/mcp"$/);
      }
    });

    test("a verified wid_mcp_ token is billed on the key digest the verifier names", async () => {
      const token = `wid_mcp_${"v".repeat(43)}`;
      verdicts.set(token, { ok: true, accountId: paid.accountId, keyHash: await sha256Hex(paid.apiKey), connectionId: "conn-1" });
      const debits = (await debitsOf(get().db, paid.accountId)).length;
      const res = await rpc(server.url, CALL("walletid_resolve_wallets", { wallets: [W.full] }), { Authorization: `Bearer ${token}` });
      assert.equal(res.status, 200);
      const out = await body(res);
      assert.equal(out.result.structuredContent.billed_matches, 1);
      assert.equal((await debitsOf(get().db, paid.accountId)).length, debits + 1);
      verdicts.delete(token);
      const revoked = await rpc(server.url, LIST, { Authorization: `Bearer ${token}` });
      assert.equal(revoked.status, 401, "revoked at once");
    });

    test("a failing token verifier: 503 with Retry-After, never a 500", async () => {
      verifierDown = true;
      const res = await rpc(server.url, LIST, { Authorization: `Bearer wid_mcp_${"z".repeat(43)}` });
      verifierDown = false;
      assert.equal(res.status, 503);
      assert.equal(res.headers.get("Retry-After"), "5");
    });

    test("a mistyped API key connects, and its tool call is a tool error saying the key is invalid", async () => {
      for (const key of [`wid_live_${"Q".repeat(32)}`, "not-a-key"]) {
        const client = await connect("v1", server.url, key);
        const result = await client.callTool("walletid_account_balance", {});
        assert.equal(result.isError, true);
        assert.match(result.content[0].text!, /Invalid API key/);
        await client.close();
      }
    });
  });

  describe("tool errors", () => {
    test("out of credits names the purchase endpoint and the pack price; nothing is debited", async () => {
      const client = await connect("v1", server.url, broke.apiKey);
      const result = await client.callTool("walletid_resolve_wallets", { wallets: [W.full] });
      assert.equal(result.isError, true);
      assert.match(result.content[0].text!, /NO_CREDITS/);
      assert.ok(result.content[0].text!.includes(`${server.config.publicUrl}/api/x402/buy`));
      assert.match(result.content[0].text!, /1\.00 dollar .* 12 match credits/);
      assert.deepEqual(await debitsOf(get().db, broke.accountId), []);
      const free = await client.callTool("walletid_account_balance", {});
      assert.equal(free.isError, undefined, "the balance still answers at zero");
      await client.close();
    });

    test("rate limited: a tool error with the seconds to wait, nothing spent", async () => {
      const { db } = get();
      await setRateWindow(db, paid.accountId, {
        minuteStart: "2026-11-20T12:00:00Z",
        minuteUsed: 60,
        dayStart: "2026-11-20T00:00:00Z",
        dayUsed: 60,
        monthStart: "2026-11-01T00:00:00Z",
        monthUsed: 60,
      });
      const debits = (await debitsOf(db, paid.accountId)).length;
      const client = await connect("v1", server.url, paid.apiKey);
      const result = await client.callTool("walletid_resolve_wallets", { wallets: [W.full] });
      assert.equal(result.isError, true);
      assert.match(result.content[0].text!, /RATE_LIMITED\): wait 30 seconds/);
      assert.equal((await debitsOf(db, paid.accountId)).length, debits);
      await client.close();
    });

    test("bad arguments are a tool error; a tool the server does not have is a JSON-RPC error; neither a transport failure", async () => {
      const res = await rpc(server.url, CALL("walletid_nothing", {}), { Authorization: `Bearer ${paid.apiKey}` });
      assert.equal(res.status, 200);
      assert.equal((await body(res)).error.code, -32602);
      const bad = await rpc(server.url, CALL("walletid_resolve_wallets", { wallets: ["0x12"] }), { Authorization: `Bearer ${paid.apiKey}` });
      assert.equal(bad.status, 200);
      const out = await body(bad);
      assert.equal(out.result.isError, true);
      assert.match(out.result.content[0].text, /0x followed by 40 hex characters/);
    });
  });

  describe("hourly limits of methods other than tools/call", () => {
    test("counted per account for a working key, shared by the account's keys, 600 an hour", async () => {
      const subject = `account:${paid.accountId}`;
      const before = await hourlyCount(subject);
      assert.equal((await rpc(server.url, LIST, { Authorization: paid.apiKey })).status, 200);
      assert.equal(await hourlyCount(subject), before + 1);
      await setHourly(subject, 600);
      const second = await createApiKey(get().db, { accountId: paid.accountId, now: clock.now() });
      assert.ok(second.ok);
      for (const key of [paid.apiKey, second.apiKey]) {
        const res = await rpc(server.url, LIST, { Authorization: `Bearer ${key}` });
        assert.equal(res.status, 429);
        assert.equal(res.headers.get("Retry-After"), "3570", "until the hour ends");
        assert.match((await body(res)).error.message, /Hourly limit reached \(account\): 600 requests an hour per account/);
      }
      const call = await rpc(server.url, CALL("walletid_index_stats", {}), { Authorization: `Bearer ${paid.apiKey}` });
      assert.equal(call.status, 200, "tool calls are limited by the key's windows, not by the hourly count");
      clock.set("2026-11-20T13:00:05Z");
      assert.equal((await rpc(server.url, LIST, { Authorization: paid.apiKey })).status, 200, "a new hour");
      clock.set(START);
    });

    test("counted per IP address without a working credential, 120 an hour; a mistyped key counts as none", async () => {
      await setHourly("ip:127.0.0.1", 120);
      const callers: Array<Record<string, string>> = [{}, { Authorization: `Bearer wid_live_${"Q".repeat(32)}` }, { "X-Forwarded-For": "203.0.113.9" }];
      for (const headers of callers) {
        const res = await rpc(server.url, INITIALIZE, headers);
        assert.equal(res.status, 429, JSON.stringify(headers));
        assert.match((await body(res)).error.message, /Hourly limit reached \(ip\): 120 requests an hour per IP address/);
        assert.ok(Number(res.headers.get("Retry-After")) > 0);
      }
      assert.equal((await rpc(server.url, INITIALIZE, { Authorization: paid.apiKey })).status, 200, "a working key counts on its account");
      await get().db.query("DELETE FROM mcp_hourly_requests");
    });

    test("TRUST_PROXY=1: the address one hop back in X-Forwarded-For is the client", async () => {
      await setHourly("ip:198.51.100.7", 120);
      const limited = await rpc(proxied.url, LIST, { "X-Forwarded-For": "10.0.0.1, 198.51.100.7" });
      assert.equal(limited.status, 429);
      const other = await rpc(proxied.url, LIST, { "X-Forwarded-For": "198.51.100.7, 198.51.100.8" });
      assert.equal(other.status, 200, "a client cannot pick its address by writing the header's first entry");
      assert.equal(await hourlyCount("ip:198.51.100.8"), 1);
      const direct = await rpc(proxied.url, LIST);
      assert.equal(direct.status, 200, "no header: the peer");
      assert.equal(await hourlyCount("ip:127.0.0.1"), 1);
    });

    test("two servers on one database share the count", async () => {
      await get().db.query("DELETE FROM mcp_hourly_requests");
      for (const s of [server, proxied, server]) assert.equal((await rpc(s.url, LIST, { Authorization: paid.apiKey })).status, 200);
      assert.equal(await hourlyCount(`account:${paid.accountId}`), 3);
    });
  });

  describe("malformed requests are JSON-RPC errors, never 5xx", () => {
    const cases: Array<[string, RequestInit, number]> = [
      ["not JSON", { method: "POST", headers: { "Content-Type": "application/json", Accept: "application/json, text/event-stream" }, body: "{nope" }, 400],
      ["empty body", { method: "POST", headers: { "Content-Type": "application/json", Accept: "application/json, text/event-stream" }, body: "" }, 400],
      ["not JSON-RPC", { method: "POST", headers: { "Content-Type": "application/json", Accept: "application/json, text/event-stream" }, body: '{"hello":1}' }, 400],
      ["an empty batch", { method: "POST", headers: { "Content-Type": "application/json", Accept: "application/json, text/event-stream" }, body: "[]" }, 400],
      ["a number", { method: "POST", headers: { "Content-Type": "application/json", Accept: "application/json, text/event-stream" }, body: "42" }, 400],
      ["text/plain", { method: "POST", headers: { "Content-Type": "text/plain" }, body: JSON.stringify(LIST) }, 415],
    ];
    for (const [name, init, status] of cases) {
      test(name, async () => {
        const res = await fetch(`${server.url}/mcp`, init);
        const out = await body(res);
        assert.equal(res.status, status, JSON.stringify(out));
        assert.equal(out.jsonrpc, "2.0");
        assert.equal(typeof out.error.code, "number");
      });
    }

    test("GET and DELETE: 405, POST allowed", async () => {
      for (const method of ["GET", "DELETE"]) {
        const res = await fetch(`${server.url}/mcp`, { method });
        assert.equal(res.status, 405);
        assert.match(res.headers.get("Allow") ?? "", /POST/);
        assert.equal((await body(res)).code, "METHOD_NOT_ALLOWED");
      }
    });

    test("an unknown method: JSON-RPC method not found", async () => {
      const res = await rpc(server.url, { jsonrpc: "2.0", id: 9, method: "resources/list", params: {} });
      const out = await body(res);
      assert.ok(res.status < 500);
      assert.equal(out.error.code, -32601);
    });
  });

  test("answers: one request and the same request in a batch answer alike; a one-address answer goes out uncompressed with its length, the tool list gzipped", async () => {
    const { apiKey } = await createCustomer(get().db, { packs: [{ pack: "Agent" }], now: clock.now() });
    const headers = { Authorization: `Bearer ${apiKey}`, "Accept-Encoding": "gzip", "Mcp-Protocol-Version": "2025-11-25" };
    const call = CALL("walletid_resolve_wallets", { wallets: [W.full] });

    const single = await rpc(server.url, call, headers);
    const text = await single.clone().text();
    const one = await body(single);
    assert.equal(single.status, 200, JSON.stringify(one));
    assert.equal(single.headers.get("content-type"), "application/json");
    assert.equal(single.headers.get("content-encoding"), null, "a one-address answer (under 2 KiB) is not worth gzipping");
    assert.equal(Number(single.headers.get("content-length")), new TextEncoder().encode(text).byteLength);
    assert.ok(single.headers.get("x-request-id"), "the app's headers are kept");
    assert.equal(one.id, call.id);
    assert.equal(one.result.structuredContent.records[0].wallet, W.full);
    assert.equal(one.result.structuredContent.billed_matches, 1);

    // a batch of one goes through the SDK's HTTP transport (which answers it with the lone response)
    const batched = await rpc(server.url, [call], headers);
    const answered = await body(batched);
    const again = Array.isArray(answered) ? answered[0] : answered;
    assert.equal(batched.status, 200);
    assert.equal(again.id, call.id);
    const { quota: q1, ...rest1 } = one.result.structuredContent;
    const { quota: q2, ...rest2 } = again.result.structuredContent;
    assert.deepEqual(rest2, rest1);
    assert.equal(q2.credits_available, q1.credits_available - 1, "each billed once");

    const list = await rpc(server.url, LIST, headers);
    assert.equal(list.status, 200);
    assert.equal(list.headers.get("content-encoding"), "gzip", "the tool list is over 8 KiB");
    assert.equal((await body(list)).result.tools.length, 10);
  });

  test("the OpenAPI document and /docs describe POST /mcp", async () => {
    const doc = await body(await fetch(`${server.url}/api/v1/openapi.json`));
    const op = doc.paths["/mcp"].post;
    assert.deepEqual(doc.paths["/mcp"].servers.map((s: { url: string }) => s.url), [server.config.publicUrl]);
    assert.deepEqual(op.security, [{ bearerApiKey: [] }, { plainApiKey: [] }, {}], "a credential is optional");
    assert.ok(op.responses["401"].headers["WWW-Authenticate"]);
    assert.ok(op.responses["429"].headers["Retry-After"]);
    assert.match(op.description, /walletid_reverse_farcaster/);
    const docs = await (await fetch(`${server.url}/docs`)).text();
    assert.match(docs, /\/mcp/);
    assert.match(docs, /walletid_resolve_wallets/);
  });

  describe("DNS rebinding", () => {
    test("a foreign Host or Origin is refused, loopback ones pass", async () => {
      const foreignOrigin = await rpc(server.url, LIST, { Origin: "https://evil.example.com" });
      assert.equal(foreignOrigin.status, 403);
      const local = await rpc(server.url, LIST, { Origin: server.url });
      assert.equal(local.status, 200);
      const http = await import("node:http");
      const status = await new Promise<number>((resolve, reject) => {
        const req = http.request(`${server.url}/mcp`, {
          method: "POST",
          headers: { Host: "evil.example.com", "Content-Type": "application/json", Accept: "application/json, text/event-stream" },
        });
        req.on("response", (res) => {
          res.resume();
          resolve(res.statusCode!);
        });
        req.on("error", reject);
        req.end(JSON.stringify(LIST));
      });
      assert.equal(status, 403);
    });
  });
});
