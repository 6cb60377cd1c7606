// The authorization endpoint and consent page over HTTP (client registration and redirect rules, docs/oauth.md), and dynamic
// registration: exact redirects with loopback ports free, where errors and declines may go
// (loopback and OAUTH_TRUSTED_CALLBACK_HOST only), repeated parameters, PKCE and resource rules,
// the page's own protections (CSP, frame-ancestors, CSRF cookie, the API key never echoed).
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { eachDatabase } from "../support/db.ts";
import { expectStatus } from "../support/http.ts";
import { createClock, createCustomer, type TestServer } from "../support/server.ts";
import { answerConsent, authorizeUrl, CALLBACK, openConsent, pkce, register, startOAuthServer } from "./support.ts";

const HOSTED = "https://hosted.example/api/callback";
const UNTRUSTED = "https://elsewhere.example/cb";

eachDatabase("OAuth authorization endpoint and registration", (get) => {
  const clock = createClock("2026-11-20T12:00:30Z");
  let server: TestServer;
  let apiKey: string;
  let clientId: string;
  let challenge: string;

  before(async () => {
    server = await startOAuthServer(get().db, { clock, env: { OAUTH_TRUSTED_CALLBACK_HOST: "hosted.example" } });
    ({ apiKey } = await createCustomer(get().db, { now: clock.now() }));
    clientId = (await register(server, { redirect_uris: [CALLBACK, HOSTED, UNTRUSTED] })).client_id;
    challenge = (await pkce()).challenge;
  });
  after(() => server.close());

  const good = (over: Record<string, string | undefined> = {}) => ({
    response_type: "code",
    client_id: clientId,
    redirect_uri: CALLBACK,
    code_challenge: challenge,
    code_challenge_method: "S256",
    state: "st",
    ...over,
  });

  test("the consent page: self-contained, unframeable, uncached, with a CSRF cookie and the contract's form", async () => {
    const page = await openConsent(authorizeUrl(server, good()));
    assert.equal(page.status, 200, page.html);
    const csp = page.headers.get("content-security-policy") ?? "";
    assert.match(csp, /default-src 'none'/);
    assert.match(csp, /frame-ancestors 'none'/);
    assert.match(csp, /form-action 'self' http:\/\/127\.0\.0\.1:9999/);
    assert.equal(page.headers.get("x-frame-options"), "DENY");
    assert.equal(page.headers.get("cache-control"), "no-store");
    assert.ok(!/<script/i.test(page.html), "no scripts");
    assert.ok(!/(src|href)=["']?(https?:)?\/\//i.test(page.html), "nothing from another origin");
    assert.match(page.cookie, /^wid_consent_[0-9a-f]{32}=/);
    assert.match(page.headers.get("set-cookie") ?? "", /HttpOnly; SameSite=Strict/);
    assert.deepEqual(Object.keys(page.hidden).sort(), ["consent", "csrf"]);
    assert.match(page.html, /name="api_key"/);
    assert.match(page.html, /name="decision" value="approve"/);
    assert.match(page.html, /name="decision" value="decline"/);
    assert.match(page.html, /Test host/);
    assert.match(page.html, /127\.0\.0\.1:9999/, "the client's hostname");
    for (const can of ["resolve wallets", "lookup jobs", "credit balance"]) assert.match(page.html, new RegExp(can));
    for (const cannot of ["buy credits", "change your account", "billing details or your email"]) assert.match(page.html, new RegExp(cannot));
  });

  test("a wrong API key shows the page again without echoing it; a forged or replayed form is refused", async () => {
    const page = await openConsent(authorizeUrl(server, good()));
    const wrong = "wid_live_" + "Z".repeat(32);
    const res = await answerConsent(page, { apiKey: wrong, decision: "approve" });
    assert.equal(res.status, 401);
    const html = await res.text();
    assert.match(html, /That API key is not valid/);
    assert.ok(!html.includes(wrong), "the key typed is not echoed");
    const noCookie = await answerConsent(page, { apiKey, decision: "approve", cookie: "" });
    assert.equal(noCookie.status, 403, "no CSRF cookie");
    const otherCookie = await answerConsent(page, { apiKey, decision: "approve", cookie: `${page.cookie.split("=")[0]}=forged` });
    assert.equal(otherCookie.status, 403, "a cookie that is not the page's");
    const ok = await answerConsent(page, { apiKey, decision: "approve" });
    assert.equal(ok.status, 303, await ok.text());
    const twice = await answerConsent(page, { apiKey, decision: "approve" });
    assert.equal(twice.status, 400, "a consent is answered once");
    assert.equal(twice.headers.get("location"), null);
  });

  test("redirect_uri: exact match, except loopback over http with any port", async () => {
    for (const uri of ["http://127.0.0.1:1234/callback", "http://127.0.0.1/callback"]) {
      assert.equal((await openConsent(authorizeUrl(server, good({ redirect_uri: uri })))).status, 200, uri);
    }
    const loop = await register(server, { redirect_uris: ["http://localhost:3000/cb", "http://[::1]:3000/cb"] });
    for (const uri of ["http://localhost:51000/cb", "http://[::1]:51000/cb"]) {
      assert.equal((await openConsent(authorizeUrl(server, good({ client_id: loop.client_id, redirect_uri: uri })))).status, 200, uri);
    }
    for (const uri of ["http://127.0.0.1:1234/other", "https://127.0.0.1:9999/callback", "http://127.0.0.1:9999/callback?x=1", "https://hosted.example/api/callback/", "https://hosted.example:8443/api/callback", "http://localhost:9999/callback"]) {
      const page = await openConsent(authorizeUrl(server, good({ redirect_uri: uri })));
      assert.equal(page.status, 400, `${uri}: ${page.html.slice(0, 200)}`);
      assert.equal(page.headers.get("location"), null, "a redirect that does not match is never used");
      assert.match(page.html, /not one this client declared/);
    }
    const unknown = await openConsent(authorizeUrl(server, good({ client_id: "wid_client_nobody" })));
    assert.equal(unknown.status, 400);
    assert.match(unknown.html, /not registered/);
  });

  test("errors go to loopback and trusted callbacks with state and iss, and are shown on the page otherwise", async () => {
    const bad = { code_challenge_method: "plain" };
    for (const uri of [CALLBACK, HOSTED]) {
      const res = await fetch(authorizeUrl(server, good({ ...bad, redirect_uri: uri })), { redirect: "manual" });
      assert.equal(res.status, 302, uri);
      const back = new URL(res.headers.get("location")!);
      assert.equal(`${back.origin}${back.pathname}`, uri);
      assert.equal(back.searchParams.get("error"), "invalid_request");
      assert.equal(back.searchParams.get("state"), "st");
      assert.equal(back.searchParams.get("iss"), server.url);
    }
    const shown = await openConsent(authorizeUrl(server, good({ ...bad, redirect_uri: UNTRUSTED })));
    assert.equal(shown.status, 400);
    assert.equal(shown.headers.get("location"), null);
    assert.match(shown.html, /S256/);

    const page = await openConsent(authorizeUrl(server, good({ redirect_uri: UNTRUSTED })));
    const declined = await answerConsent(page, { decision: "decline" });
    assert.equal(declined.status, 200, "a decline for an untrusted callback is shown on the page");
    assert.match(await declined.text(), /You declined/);
    const hostedPage = await openConsent(authorizeUrl(server, good({ redirect_uri: HOSTED })));
    const hostedDecline = await answerConsent(hostedPage, { decision: "decline" });
    assert.equal(hostedDecline.status, 303);
    assert.equal(new URL(hostedDecline.headers.get("location")!).searchParams.get("error"), "access_denied");
    const approved = await answerConsent(await openConsent(authorizeUrl(server, good({ redirect_uri: UNTRUSTED }))), { apiKey, decision: "approve" });
    assert.equal(approved.status, 303, "success always goes to the declared callback");
    assert.ok(new URL(approved.headers.get("location")!).searchParams.get("code"));
  });

  test("PKCE S256, response_type, resource and scope rules", async () => {
    const cases: Array<[Record<string, string | undefined>, string]> = [
      [{ code_challenge: undefined }, "invalid_request"],
      [{ code_challenge_method: undefined }, "invalid_request"],
      [{ code_challenge: "short" }, "invalid_request"],
      [{ response_type: "token" }, "unsupported_response_type"],
      [{ resource: "https://other.example/mcp" }, "invalid_target"],
      [{ scope: "admin" }, "invalid_scope"],
    ];
    for (const [over, error] of cases) {
      const res = await fetch(authorizeUrl(server, good(over)), { redirect: "manual" });
      assert.equal(res.status, 302, JSON.stringify(over));
      assert.equal(new URL(res.headers.get("location")!).searchParams.get("error"), error, JSON.stringify(over));
    }
    for (const over of [{ resource: `${server.url}/mcp` }, { scope: "mcp" }, { resource: undefined, scope: undefined }]) {
      assert.equal((await openConsent(authorizeUrl(server, good(over)))).status, 200, JSON.stringify(over));
    }
  });

  test("repeated parameters are refused, except resource naming this server", async () => {
    const base = authorizeUrl(server, good());
    const twice = await fetch(`${base}&state=other`, { redirect: "manual" });
    assert.equal(twice.status, 302);
    const back = new URL(twice.headers.get("location")!);
    assert.equal(back.searchParams.get("error"), "invalid_request");
    assert.equal(back.searchParams.get("state"), null, "a repeated state is not echoed");
    const clientTwice = await openConsent(`${base}&client_id=${clientId}`);
    assert.equal(clientTwice.status, 400);
    assert.equal(clientTwice.headers.get("location"), null);
    const redirectTwice = await openConsent(`${base}&redirect_uri=${encodeURIComponent(CALLBACK)}`);
    assert.equal(redirectTwice.status, 400);
    const resources = `&resource=${encodeURIComponent(`${server.url}/mcp`)}`;
    assert.equal((await openConsent(`${base}${resources}${resources}`)).status, 200, "resource may repeat naming this server");
    const mixed = await fetch(`${base}${resources}&resource=${encodeURIComponent("https://other.example/mcp")}`, { redirect: "manual" });
    assert.equal(new URL(mixed.headers.get("location")!).searchParams.get("error"), "invalid_target");
  });

  test("registration: public clients only, grant types kept and dropped, redirect rules, errors as RFC 7591", async () => {
    const ok = await register(server, { grant_types: ["authorization_code", "implicit", "refresh_token", "password"], token_endpoint_auth_method: "client_secret_basic" });
    assert.deepEqual(ok.grant_types, ["authorization_code", "refresh_token"]);
    assert.equal(ok.token_endpoint_auth_method, "none");
    assert.equal(ok.client_secret, undefined);
    assert.match(ok.client_id, /^wid_client_[A-Za-z0-9_-]+$/);
    const only = await register(server, { grant_types: ["authorization_code"] });
    assert.deepEqual(only.grant_types, ["authorization_code"]);
    const post = (body: unknown) => server.request("/api/oauth/register", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
    const refusals: Array<[unknown, string]> = [
      [{ redirect_uris: [CALLBACK], grant_types: ["refresh_token"] }, "invalid_client_metadata"],
      [{ redirect_uris: [CALLBACK], grant_types: ["client_credentials"] }, "invalid_client_metadata"],
      [{ redirect_uris: [] }, "invalid_redirect_uri"],
      [{}, "invalid_redirect_uri"],
      [{ redirect_uris: ["http://example.com/cb"] }, "invalid_redirect_uri"],
      [{ redirect_uris: ["https://example.com/cb#x"] }, "invalid_redirect_uri"],
      [{ redirect_uris: ["myapp://cb"] }, "invalid_redirect_uri"],
      [[1, 2], "invalid_client_metadata"],
    ];
    for (const [body, error] of refusals) {
      const res = await expectStatus(await post(body), 400, JSON.stringify(body));
      assert.equal(res.body.error, error, res.text);
      assert.equal(typeof res.body.error_description, "string");
    }
    const notJson = await server.request("/api/oauth/register", { method: "POST", headers: { "Content-Type": "application/json" }, body: "{" });
    assert.equal((await expectStatus(notJson, 400)).body.error, "invalid_client_metadata");
  });

  test("registration is limited per IP address", async () => {
    clock.set(new Date(Math.ceil(clock.now().getTime() / 3_600_000) * 3_600_000 + 60_000));
    for (let i = 0; i < 20; i++) await register(server);
    const res = await server.request("/api/oauth/register", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ redirect_uris: [CALLBACK] }) });
    const limited = await expectStatus(res, 429);
    assert.equal(limited.body.error, "slow_down");
    assert.equal(limited.headers.get("retry-after"), String(59 * 60));
    clock.advance(3_600_000);
    await register(server);
  });

  test("authorization requests (consent pages) are limited per IP address", async () => {
    clock.set(new Date(Math.ceil(clock.now().getTime() / 3_600_000) * 3_600_000 + 120_000));
    const url = authorizeUrl(server, good());
    for (let i = 0; i < 120; i++) assert.notEqual((await fetch(url, { redirect: "manual" })).status, 429, `request ${i + 1}`);
    const limited = await fetch(url, { redirect: "manual" });
    assert.equal(limited.status, 429);
    assert.equal(limited.headers.get("retry-after"), String(58 * 60));
    assert.match(await limited.text(), /Too many authorization requests/);
    clock.advance(3_600_000);
    assert.equal((await openConsent(url)).status, 200);
  });

  test("discovery documents: resource exactly {site_url}/mcp at both places; the metadata the interface names", async () => {
    for (const path of ["/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"]) {
      const prm = await expectStatus(await server.request(path), 200);
      assert.equal(prm.body.resource, `${server.url}/mcp`);
      assert.deepEqual(prm.body.authorization_servers, [server.url]);
      assert.deepEqual(prm.body.scopes_supported, ["mcp"]);
      assert.equal(prm.headers.get("access-control-allow-origin"), "*");
    }
    const as = (await expectStatus(await server.request("/.well-known/oauth-authorization-server"), 200)).body;
    assert.deepEqual(
      { ...as, service_documentation: undefined },
      {
        issuer: server.url,
        authorization_endpoint: `${server.url}/api/oauth/authorize`,
        token_endpoint: `${server.url}/api/oauth/token`,
        registration_endpoint: `${server.url}/api/oauth/register`,
        revocation_endpoint: `${server.url}/api/oauth/revoke`,
        response_types_supported: ["code"],
        response_modes_supported: ["query"],
        grant_types_supported: ["authorization_code", "refresh_token"],
        code_challenge_methods_supported: ["S256"],
        token_endpoint_auth_methods_supported: ["none"],
        revocation_endpoint_auth_methods_supported: ["none"],
        scopes_supported: ["mcp"],
        client_id_metadata_document_supported: true,
        authorization_response_iss_parameter_supported: true,
        service_documentation: undefined,
      },
    );
    const preflight = await server.request("/.well-known/oauth-authorization-server", { method: "OPTIONS", headers: { "Access-Control-Request-Headers": "mcp-protocol-version" } });
    assert.equal(preflight.status, 204);
    assert.match(preflight.headers.get("access-control-allow-headers") ?? "", /mcp-protocol-version/);
  });
});
