// The whole OAuth flow with oauth4webapi as a strict, independent client through a real server:
// discovery (RFC 9728 resource and RFC 8414 issuer checks), registration (201), authorization
// with PKCE and the consent form submitted over HTTP, RFC 9207 iss validation, the code
// exchange, a refresh, revocation; then what the tokens can and cannot do.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import * as oauth from "oauth4webapi";
import { eachDatabase } from "../support/db.ts";
import { assertErrorBody, expectStatus } from "../support/http.ts";
import { createClock, createCustomer, type TestServer } from "../support/server.ts";
import { answerConsent, approvedCode, CALLBACK, exchange, openConsent, startOAuthServer, tokenRequest } from "./support.ts";
import { sql } from "../../src/db/queries.ts";
import { listConnections } from "../../src/oauth/grants.ts";

const insecure = { [oauth.allowInsecureRequests]: true } as const;

eachDatabase("OAuth flow with oauth4webapi", (get) => {
  const clock = createClock("2026-11-20T12:00:30Z");
  let server: TestServer;
  let apiKey: string;
  let accountId: string;

  before(async () => {
    server = await startOAuthServer(get().db, { clock });
    ({ apiKey, accountId } = await createCustomer(get().db, { packs: [{ pack: "Agent", quantity: 1 }], now: clock.now() }));
  });
  after(() => server.close());

  test("discovery, registration, consent, iss, code, refresh and revocation pass a strict client", async () => {
    const resource = new URL(`${server.url}/mcp`);
    const rs = await oauth.processResourceDiscoveryResponse(resource, await oauth.resourceDiscoveryRequest(resource, insecure));
    assert.equal(rs.resource, `${server.url}/mcp`);
    const issuer = new URL(rs.authorization_servers![0]);
    const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: "oauth2", ...insecure }));
    assert.equal(as.issuer, server.url, "issuer is {site_url} exactly");
    assert.deepEqual(as.code_challenge_methods_supported, ["S256"]);
    assert.deepEqual(as.scopes_supported, ["mcp"]);
    assert.equal(as.client_id_metadata_document_supported, true);
    assert.equal(as.authorization_response_iss_parameter_supported, true);

    const client = await oauth.processDynamicClientRegistrationResponse(
      await oauth.dynamicClientRegistrationRequest(
        as,
        { redirect_uris: [CALLBACK], token_endpoint_auth_method: "none", grant_types: ["authorization_code", "refresh_token", "client_credentials"], response_types: ["code"], client_name: "oauth4webapi" },
        insecure,
      ),
    );
    assert.deepEqual(client.grant_types, ["authorization_code", "refresh_token"], "other grant types are dropped");
    assert.equal(client.client_secret, undefined, "no secret is issued");
    assert.doesNotMatch(client.client_id, /:\/\//, "a generated client_id is never URL-shaped");

    const verifier = oauth.generateRandomCodeVerifier();
    const state = oauth.generateRandomState();
    const authz = new URL(as.authorization_endpoint!);
    authz.search = new URLSearchParams({
      response_type: "code",
      client_id: client.client_id,
      redirect_uri: CALLBACK,
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
      code_challenge_method: "S256",
      state,
      scope: "mcp",
      resource: resource.href,
    }).toString();
    const page = await openConsent(authz.href);
    assert.equal(page.status, 200, page.html);
    assert.match(page.html, /oauth4webapi/, "the page names the client");
    const answered = await answerConsent(page, { apiKey, decision: "approve" });
    assert.equal(answered.status, 303, await answered.text());
    const callback = new URL(answered.headers.get("location")!);
    assert.equal(`${callback.origin}${callback.pathname}`, CALLBACK);

    const params = oauth.validateAuthResponse(as, client, callback, state);
    const tokens = await oauth.processAuthorizationCodeResponse(
      as,
      client,
      await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, CALLBACK, verifier, { additionalParameters: { resource: resource.href }, ...insecure }),
    );
    assert.match(tokens.access_token, /^wid_mcp_[A-Za-z0-9_-]{43,}$/);
    assert.match(tokens.refresh_token!, /^wid_mcr_[A-Za-z0-9_-]{43,}$/);
    assert.equal(tokens.expires_in, 3600);
    assert.equal(tokens.scope, "mcp");
    const first = await server.app.verifyAccessToken(tokens.access_token);
    assert.ok(first.ok && first.accountId === accountId, "the access token is the account's");

    const refreshed = await oauth.processRefreshTokenResponse(
      as,
      client,
      await oauth.refreshTokenGrantRequest(as, client, oauth.None(), tokens.refresh_token!, { additionalParameters: { resource: resource.href }, ...insecure }),
    );
    assert.notEqual(refreshed.refresh_token, tokens.refresh_token, "the refresh token rotates");
    assert.notEqual(refreshed.access_token, tokens.access_token);

    await oauth.processRevocationResponse(await oauth.revocationRequest(as, client, oauth.None(), refreshed.refresh_token!, insecure));
    assert.deepEqual(await server.app.verifyAccessToken(refreshed.access_token), { ok: false }, "revoking the refresh token ends the access token too");
    assert.deepEqual(await server.app.verifyAccessToken(tokens.access_token), { ok: false }, "and every token of the connection");
    await assert.rejects(
      oauth.refreshTokenGrantRequest(as, client, oauth.None(), refreshed.refresh_token!, insecure).then((r) => oauth.processRefreshTokenResponse(as, client, r)),
      (err: any) => err instanceof oauth.ResponseBodyError && err.error === "invalid_grant",
    );
  });

  test("a wrong iss on the callback is caught by the client; ours is on every redirect, errors included", async () => {
    const got = await approvedCode(server, { apiKey });
    assert.deepEqual(got.location.searchParams.getAll("iss"), [server.url]);
    assert.deepEqual(got.location.searchParams.getAll("state"), ["s1"]);
    const as = { issuer: server.url, authorization_response_iss_parameter_supported: true } as oauth.AuthorizationServer;
    const forged = new URL(got.location);
    forged.searchParams.set("iss", "https://evil.example");
    assert.throws(() => oauth.validateAuthResponse(as, { client_id: got.clientId }, forged, "s1"));
    const missing = new URL(got.location);
    missing.searchParams.delete("iss");
    assert.throws(() => oauth.validateAuthResponse(as, { client_id: got.clientId }, missing, "s1"));
    // a declined consent goes to a loopback callback with error, state and iss
    const page = await openConsent(`${server.url}/api/oauth/authorize?${new URLSearchParams({ response_type: "code", client_id: got.clientId, redirect_uri: CALLBACK, code_challenge: "x".repeat(43), code_challenge_method: "S256", state: "s2" })}`);
    const declined = await answerConsent(page, { decision: "decline" });
    assert.equal(declined.status, 303);
    const back = new URL(declined.headers.get("location")!);
    assert.equal(back.searchParams.get("error"), "access_denied");
    assert.equal(back.searchParams.get("state"), "s2");
    assert.equal(back.searchParams.get("iss"), server.url);
    assert.throws(() => oauth.validateAuthResponse(as, { client_id: got.clientId }, back, "s2"), oauth.AuthorizationResponseError);
  });

  test("token responses are no-store JSON; the REST API takes API keys only; the purchase endpoint refuses the token", async () => {
    const got = await approvedCode(server, { apiKey });
    const res = await tokenRequest(server, { grant_type: "authorization_code", code: got.code, code_verifier: got.verifier, client_id: got.clientId, redirect_uri: got.redirectUri });
    const checked = await expectStatus(res, 200);
    assert.equal(checked.headers.get("cache-control"), "no-store");
    assert.equal(checked.headers.get("content-type"), "application/json");
    const usage = await expectStatus(await server.request("/api/v1/usage", { key: checked.body.access_token }), 401, "an OAuth token on the REST API");
    assertErrorBody(usage, "UNAUTHORIZED");
    await expectStatus(await server.request("/api/v1/connections", { key: checked.body.access_token }), 401, "an OAuth token cannot list connections");
    const buy = await expectStatus(
      await server.request("/api/x402/buy", { method: "POST", key: checked.body.access_token, headers: { "Content-Type": "application/json" }, body: "{}" }),
      403,
      "an OAuth token cannot buy credits",
    );
    assertErrorBody(buy, "OAUTH_CANNOT_BUY");
  });

  test("connections: listed with the API key, disconnected at once, 404 for another account's", async () => {
    const got = await approvedCode(server, { apiKey });
    const tokens = await exchange(server, got);
    clock.advance(5_000);
    assert.ok((await server.app.verifyAccessToken(tokens.access_token)).ok);
    const list = await expectStatus(await server.request("/api/v1/connections", { key: apiKey }), 200);
    const mine = list.body.data.find((c: any) => c.client_id === got.clientId);
    assert.ok(mine, `the connection is listed: ${list.text}`);
    assert.deepEqual(Object.keys(mine).sort(), ["client_id", "client_name", "created_at", "id", "last_used_at"]);
    assert.equal(mine.client_name, "Test host");
    assert.equal(mine.last_used_at, clock.now().toISOString(), "a verified token marks the connection used");
    assert.equal(list.body.meta.count, list.body.data.length);

    const other = await createCustomer(get().db, { now: clock.now() });
    assertErrorBody(await expectStatus(await server.request(`/api/v1/connections/${mine.id}`, { method: "DELETE", key: other.apiKey }), 404), "CONNECTION_NOT_FOUND");
    assert.ok((await server.app.verifyAccessToken(tokens.access_token)).ok, "another account cannot end it");

    const ended = await expectStatus(await server.request(`/api/v1/connections/${mine.id}`, { method: "DELETE", key: apiKey }), 200);
    assert.deepEqual(ended.body.data, { id: mine.id, disconnected: true });
    assert.deepEqual(await server.app.verifyAccessToken(tokens.access_token), { ok: false });
    const refused = await expectStatus(await tokenRequest(server, { grant_type: "refresh_token", refresh_token: tokens.refresh_token }), 400);
    assert.equal(refused.body.error, "invalid_grant", "the refresh token stops at the same moment");
    const after = await expectStatus(await server.request("/api/v1/connections", { key: apiKey }), 200);
    assert.ok(!after.body.data.some((c: any) => c.id === mine.id), "no longer listed");
    assertErrorBody(await expectStatus(await server.request(`/api/v1/connections/${mine.id}`, { method: "DELETE", key: apiKey }), 404), "CONNECTION_NOT_FOUND");
  });

  test("access tokens last one hour", async () => {
    const tokens = await exchange(server, await approvedCode(server, { apiKey }));
    clock.advance(3_600_000 - 1000);
    assert.ok((await server.app.verifyAccessToken(tokens.access_token)).ok);
    clock.advance(1000);
    assert.deepEqual(await server.app.verifyAccessToken(tokens.access_token), { ok: false }, "expired after one hour");
    const renewed = await expectStatus(await tokenRequest(server, { grant_type: "refresh_token", refresh_token: tokens.refresh_token }), 200);
    assert.ok((await server.app.verifyAccessToken(renewed.body.access_token)).ok, "renewed by the refresh token");
  });

  test("the connection's hidden key is not an API key of the account: not counted in the cap, never usable", async () => {
    const keys = await get().db.query<{ n: number }>("SELECT count(*)::integer AS n FROM api_keys WHERE account_id = $1 AND internal AND revoked_at IS NULL", [accountId]);
    assert.ok(keys[0].n >= 1, "connections own hidden keys");
    const { createApiKey } = await import("../../src/ledger/keys.ts");
    const made: string[] = [];
    for (let i = 0; i < 9; i++) {
      const k = await createApiKey(get().db, { accountId, now: clock.now() });
      assert.ok(k.ok, `key ${i + 2} of 10 is allowed although connections hold hidden keys`);
      made.push(k.keyId);
    }
    const eleventh = await createApiKey(get().db, { accountId, now: clock.now() });
    assert.deepEqual(eleventh, { ok: false, code: "KEY_CAP_REACHED" });
    await get().db.query("UPDATE api_keys SET revoked_at = $2 WHERE id = ANY($1::uuid[])", [made, clock.now()]);
  });
});

eachDatabase("OAuth connections and a paying wallet's keys", (get) => {
  test("a connection's hidden key is not one of the wallet's three keys; a revoke-all recovery ends the connection and reports person-held keys only", async () => {
    const clock = createClock("2026-11-20T12:00:30Z");
    const server = await startOAuthServer(get().db, { clock });
    try {
      const { apiKey, accountId } = await createCustomer(get().db, { now: clock.now() });
      const wallet = `0x${"ab".repeat(20)}`;
      await get().db.query("INSERT INTO x402_wallets (wallet, account_id, created_at) VALUES ($1, $2, $3)", [wallet, accountId, clock.now()]);
      const tokens = await exchange(server, await approvedCode(server, { apiKey }));
      const [count] = await get().db.query<{ active_keys: number }>(sql("x402_wallets_select_keys"), [wallet]);
      assert.equal(count.active_keys, 1, "the API key only, not the connection's hidden key");
      const revoked = await get().db.query<{ prefix: string }>(sql("x402_api_keys_revoke_all"), [accountId, clock.now()]);
      assert.deepEqual(revoked.map((r) => r.prefix), [apiKey.slice(0, 12)], "revoked_prefixes names the person's key only");
      assert.deepEqual(await server.app.verifyAccessToken(tokens.access_token), { ok: false }, "the connection ended with the keys");
      const refused = await expectStatus(await tokenRequest(server, { grant_type: "refresh_token", refresh_token: tokens.refresh_token }), 400);
      assert.equal(refused.body.error, "invalid_grant");
      assert.deepEqual(await listConnections(get().db, accountId), []);
    } finally {
      await server.close();
    }
  });
});
