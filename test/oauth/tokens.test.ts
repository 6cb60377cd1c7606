// The token endpoint's refusals and races: ten parallel refreshes of one token (one set issued,
// the others the grace 503, the connection survives), reuse after the 30-second grace (the
// connection ends), code replay, expiry, wrong verifier, wrong redirect, wrong client, repeated
// parameters, resource checks, the per-connection limit, and a database that does not answer.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type { Db } from "../../src/db/types.ts";
import { eachDatabase } from "../support/db.ts";
import { expectStatus } from "../support/http.ts";
import { createClock, createCustomer, startServer, type TestServer } from "../support/server.ts";
import { approvedCode, exchange, startOAuthServer, tokenRequest } from "./support.ts";

function assertOAuthError(checked: { body: any; text: string; headers: Headers }, error: string) {
  assert.equal(checked.body?.error, error, checked.text);
  assert.equal(typeof checked.body.error_description, "string");
  assert.equal(checked.headers.get("cache-control"), "no-store");
  assert.equal(checked.headers.get("content-type"), "application/json");
}

eachDatabase("OAuth token endpoint", (get) => {
  const clock = createClock("2026-11-20T12:00:30Z");
  let server: TestServer;
  let apiKey: string;

  before(async () => {
    server = await startOAuthServer(get().db, { clock });
    ({ apiKey } = await createCustomer(get().db, { now: clock.now() }));
  });
  after(() => server.close());

  test("ten parallel refreshes of one token: one new set, nine grace 503s without tokens, the connection survives", async () => {
    const tokens = await exchange(server, await approvedCode(server, { apiKey }));
    const answers = await Promise.all(
      Array.from({ length: 10 }, () => tokenRequest(server, { grant_type: "refresh_token", refresh_token: tokens.refresh_token }).then((r) => expectStatus(r, r.status))),
    );
    const won = answers.filter((a) => a.status === 200);
    const rotated = answers.filter((a) => a.status === 503);
    assert.equal(won.length, 1, `exactly one rotation wins: ${answers.map((a) => a.status)}`);
    assert.equal(rotated.length, 9, answers.map((a) => a.text).join("\n"));
    for (const r of rotated) {
      assertOAuthError(r, "temporarily_unavailable");
      assert.equal(r.body.token_rotated, true);
      assert.equal(r.body.access_token, undefined, "no tokens");
      assert.equal(r.body.refresh_token, undefined);
      assert.equal(r.headers.get("retry-after"), null, "not an invitation to resend");
    }
    const { access_token, refresh_token } = won[0].body;
    assert.ok((await server.app.verifyAccessToken(access_token)).ok, "the winner's tokens work");
    assert.ok((await server.app.verifyAccessToken(tokens.access_token)).ok, "the connection survives");
    const rows = await get().db.query<{ n: number }>(
      "SELECT count(*)::integer AS n FROM oauth_tokens t JOIN oauth_tokens o ON o.connection_id = t.connection_id WHERE o.token_hash = encode(sha256(convert_to($1, 'UTF8')), 'hex') AND t.kind = 'refresh'",
      [tokens.refresh_token],
    );
    assert.equal(rows[0].n, 2, "one successor refresh token, not ten");
    clock.advance(30_000);
    const late = await expectStatus(await tokenRequest(server, { grant_type: "refresh_token", refresh_token: tokens.refresh_token }), 503, "30 s after the rotation is still within the grace");
    assert.equal(late.body.token_rotated, true);
    const next = await expectStatus(await tokenRequest(server, { grant_type: "refresh_token", refresh_token }), 200, "the successor rotates on");
    assert.ok((await server.app.verifyAccessToken(next.body.access_token)).ok);
  });

  test("a replaced refresh token presented after the grace window ends the connection", async () => {
    const tokens = await exchange(server, await approvedCode(server, { apiKey }));
    const rotated = await expectStatus(await tokenRequest(server, { grant_type: "refresh_token", refresh_token: tokens.refresh_token }), 200);
    clock.advance(30_001);
    const replay = await expectStatus(await tokenRequest(server, { grant_type: "refresh_token", refresh_token: tokens.refresh_token }), 400);
    assertOAuthError(replay, "invalid_grant");
    assert.equal(replay.body.token_rotated, undefined);
    assert.deepEqual(await server.app.verifyAccessToken(rotated.body.access_token), { ok: false }, "its access token answers 401 (no longer verifies)");
    assertOAuthError(await expectStatus(await tokenRequest(server, { grant_type: "refresh_token", refresh_token: rotated.body.refresh_token }), 400), "invalid_grant");
  });

  test("a code is single use: a replay is refused and ends what the code issued", async () => {
    const got = await approvedCode(server, { apiKey });
    const tokens = await exchange(server, got);
    const replay = await expectStatus(
      await tokenRequest(server, { grant_type: "authorization_code", code: got.code, code_verifier: got.verifier, client_id: got.clientId, redirect_uri: got.redirectUri }),
      400,
    );
    assertOAuthError(replay, "invalid_grant");
    assert.deepEqual(await server.app.verifyAccessToken(tokens.access_token), { ok: false });
    assertOAuthError(await expectStatus(await tokenRequest(server, { grant_type: "refresh_token", refresh_token: tokens.refresh_token }), 400), "invalid_grant");
  });

  test("a code is valid one minute", async () => {
    const got = await approvedCode(server, { apiKey });
    clock.advance(60_000);
    const res = await tokenRequest(server, { grant_type: "authorization_code", code: got.code, code_verifier: got.verifier, client_id: got.clientId, redirect_uri: got.redirectUri });
    assertOAuthError(await expectStatus(res, 400), "invalid_grant");
  });

  test("wrong verifier, wrong redirect, wrong client and a resource of another server are refused; the code still works after", async () => {
    const got = await approvedCode(server, { apiKey });
    const base = { grant_type: "authorization_code", code: got.code, code_verifier: got.verifier, client_id: got.clientId, redirect_uri: got.redirectUri };
    const cases: Array<[Record<string, string | string[]>, string]> = [
      [{ ...base, code_verifier: "A".repeat(43) }, "invalid_grant"],
      [{ ...base, code_verifier: "short" }, "invalid_request"],
      [{ ...base, redirect_uri: "http://127.0.0.1:9999/other" }, "invalid_grant"],
      [{ ...base, client_id: "wid_client_someoneelse" }, "invalid_grant"],
      [{ ...base, resource: "https://other.example/mcp" }, "invalid_target"],
      [{ ...base, resource: [`${server.url}/mcp`, "https://other.example/mcp"] }, "invalid_target"],
    ];
    for (const [params, error] of cases) {
      assertOAuthError(await expectStatus(await tokenRequest(server, params), 400, JSON.stringify(params)), error);
    }
    const ok = await expectStatus(await tokenRequest(server, { ...base, resource: [`${server.url}/mcp`, `${server.url}/mcp`] }), 200, "resource may repeat when every value names this server");
    assert.ok((await server.app.verifyAccessToken(ok.body.access_token)).ok);
  });

  test("a refresh must come from the same client_id (or none), and every resource must name this server", async () => {
    const got = await approvedCode(server, { apiKey });
    const tokens = await exchange(server, got);
    const other = await expectStatus(await tokenRequest(server, { grant_type: "refresh_token", refresh_token: tokens.refresh_token, client_id: "wid_client_intruder" }), 400);
    assertOAuthError(other, "invalid_grant");
    assert.ok((await server.app.verifyAccessToken(tokens.access_token)).ok, "a refusal does not end the connection");
    const foreign = await expectStatus(await tokenRequest(server, { grant_type: "refresh_token", refresh_token: tokens.refresh_token, resource: [`${server.url}/mcp`, "https://other.example/mcp"] }), 400);
    assertOAuthError(foreign, "invalid_target");
    const same = await expectStatus(await tokenRequest(server, { grant_type: "refresh_token", refresh_token: tokens.refresh_token, client_id: got.clientId, resource: `${server.url}/mcp` }), 200, "same client");
    await expectStatus(await tokenRequest(server, { grant_type: "refresh_token", refresh_token: same.body.refresh_token }), 200, "or no client_id at all");
  });

  test("repeated parameters, missing grant, unsupported grant and a non-form body are refused", async () => {
    const tokens = await exchange(server, await approvedCode(server, { apiKey }));
    assertOAuthError(await expectStatus(await tokenRequest(server, { grant_type: "refresh_token", refresh_token: [tokens.refresh_token, tokens.refresh_token] }), 400), "invalid_request");
    assertOAuthError(await expectStatus(await tokenRequest(server, { grant_type: ["refresh_token", "refresh_token"], refresh_token: tokens.refresh_token }), 400), "invalid_request");
    assertOAuthError(await expectStatus(await tokenRequest(server, {}), 400), "invalid_request");
    assertOAuthError(await expectStatus(await tokenRequest(server, { grant_type: "client_credentials" }), 400), "unsupported_grant_type");
    const json = await server.request("/api/oauth/token", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ grant_type: "refresh_token" }) });
    assertOAuthError(await expectStatus(json, 400), "invalid_request");
  });

  test("token requests are limited per connection, not per address", async () => {
    let tokens = await exchange(server, await approvedCode(server, { apiKey }));
    const otherConnection = await exchange(server, await approvedCode(server, { apiKey }));
    clock.set(new Date(Math.ceil(clock.now().getTime() / 60_000) * 60_000 + 1000));
    for (let i = 0; i < 30; i++) {
      tokens = (await expectStatus(await tokenRequest(server, { grant_type: "refresh_token", refresh_token: tokens.refresh_token }), 200, `refresh ${i + 1}`)).body;
    }
    const limited = await expectStatus(await tokenRequest(server, { grant_type: "refresh_token", refresh_token: tokens.refresh_token }), 429);
    assertOAuthError(limited, "slow_down");
    assert.equal(limited.headers.get("retry-after"), "59");
    await expectStatus(await tokenRequest(server, { grant_type: "refresh_token", refresh_token: otherConnection.refresh_token }), 200, "another connection is not limited");
    clock.advance(60_000);
    await expectStatus(await tokenRequest(server, { grant_type: "refresh_token", refresh_token: tokens.refresh_token }), 200, "the next minute; the refused token was not rotated");
  });
});

eachDatabase("OAuth token endpoint without a database", (get) => {
  let server: TestServer;
  let down = false;

  before(async () => {
    const real = get().db;
    // the database stops answering: connection-level failures, as a driver reports them
    const refuse = () => Promise.reject(Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" }));
    const flaky: Db = {
      driver: real.driver,
      query: (text, params) => (down ? refuse() : real.query(text, params)),
      queryArrays: (text, params) => (down ? refuse() : real.queryArrays(text, params)),
      exec: (text) => real.exec(text),
      transaction: (fn) => (down ? refuse() : real.transaction(fn)),
      close: () => real.close(),
    };
    server = await startServer(flaky, { selfUrl: true, clock: createClock() });
  });
  after(() => server.close());

  test("answers 503 temporarily_unavailable with Retry-After and no token_rotated; the same code works once it is back", async () => {
    const { apiKey } = await createCustomer(get().db, { now: new Date("2026-11-20T12:00:30Z") });
    const got = await approvedCode(server, { apiKey });
    down = true;
    const params = { grant_type: "authorization_code", code: got.code, code_verifier: got.verifier, client_id: got.clientId, redirect_uri: got.redirectUri };
    const res = await expectStatus(await tokenRequest(server, params), 503);
    assertOAuthError(res, "temporarily_unavailable");
    assert.equal(res.headers.get("retry-after"), "5");
    assert.equal(res.body.token_rotated, undefined);
    assert.doesNotMatch(res.text, /ECONNREFUSED|5432/, "no detail of the failure");
    down = false;
    const tokens = (await expectStatus(await tokenRequest(server, params), 200, "retrying the same code is safe")).body;
    down = true;
    const refresh = await expectStatus(await tokenRequest(server, { grant_type: "refresh_token", refresh_token: tokens.refresh_token }), 503);
    assert.equal(refresh.body.token_rotated, undefined);
    down = false;
    await expectStatus(await tokenRequest(server, { grant_type: "refresh_token", refresh_token: tokens.refresh_token }), 200, "retrying the same refresh token is safe");
  });
});
