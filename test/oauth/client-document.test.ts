// Client ID metadata documents (docs/oauth.md): a URL client_id is fetched, checked and
// cached for a day; every URL rule and every SSRF refusal is shown by the consent page refusing
// the request (no page, no code). DNS answers come from an injected resolver; the documents from
// a real HTTP server on 127.0.0.1 that the https URLs are routed to.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { eachDatabase } from "../support/db.ts";
import { createClock, createCustomer, type TestServer } from "../support/server.ts";
import { startFakeDocuments, type FakeDocuments } from "../support/fake-client-documents.ts";
import { answerConsent, authorizeUrl, CALLBACK, exchange, openConsent, pkce, startOAuthServer } from "./support.ts";

const PUBLIC_V4 = "93.184.216.34";
const PUBLIC_V6 = "2606:2800:220:1:248:1893:25c8:1946";

function doc(clientId: string, extra: Record<string, unknown> = {}) {
  return { client_id: clientId, client_name: "Doc Client", redirect_uris: [CALLBACK], token_endpoint_auth_method: "none", ...extra };
}

eachDatabase("OAuth client metadata documents", (get) => {
  const clock = createClock("2026-11-20T12:00:30Z");
  let server: TestServer;
  let docs: FakeDocuments;
  let apiKey: string;
  const dns: Record<string, string[]> = {
    "app.example": [PUBLIC_V4, PUBLIC_V6],
    "loop.example": ["127.0.0.1"],
    "private.example": [PUBLIC_V4, "10.0.0.7"],
    "linklocal.example": ["169.254.169.254"],
    "cgnat.example": ["100.64.0.1"],
    "mapped.example": ["::ffff:127.0.0.1"],
    "mapped-public.example": ["::ffff:93.184.216.34"],
    "nat64.example": ["64:ff9b::a00:1"],
    "v6loop.example": ["::1"],
    "ula.example": ["fd12:3456::1"],
    "multicast.example": ["224.0.0.251"],
  };

  before(async () => {
    docs = await startFakeDocuments();
    server = await startOAuthServer(get().db, { clock, dns, documentsAt: docs.url });
    ({ apiKey } = await createCustomer(get().db, { now: clock.now() }));
  });
  after(async () => {
    await server.close();
    await docs.close();
  });

  async function authorize(clientId: string) {
    const { challenge, verifier } = await pkce();
    const page = await openConsent(
      authorizeUrl(server, { response_type: "code", client_id: clientId, redirect_uri: CALLBACK, code_challenge: challenge, code_challenge_method: "S256", state: "st" }),
    );
    return { page, verifier };
  }

  async function refused(clientId: string, reason: RegExp) {
    const { page } = await authorize(clientId);
    assert.equal(page.status, 400, `${clientId} is refused: ${page.html.slice(0, 300)}`);
    assert.equal(page.headers.get("location"), null, "never redirected");
    assert.equal(page.hidden.consent, undefined, "no consent form");
    const text = page.html.replace(/<[^>]+>/g, " ").replace(/&#(\d+);/g, (_, n) => String.fromCharCode(Number(n)));
    assert.match(text, reason, text);
  }

  test("a good document: the page names the client and its hostname; approval gives working tokens; cached one day", async () => {
    const id = "https://app.example/oauth/client.json";
    docs.set("/oauth/client.json", { kind: "json", body: doc(id) });
    const { page, verifier } = await authorize(id);
    assert.equal(page.status, 200, page.html);
    assert.match(page.html, /Doc Client/);
    assert.match(page.html, /app\.example/);
    const res = await answerConsent(page, { apiKey, decision: "approve" });
    assert.equal(res.status, 303);
    const code = new URL(res.headers.get("location")!).searchParams.get("code")!;
    const tokens = await exchange(server, { code, verifier, clientId: id, redirectUri: CALLBACK });
    assert.ok((await server.app.verifyAccessToken(tokens.access_token)).ok);
    assert.equal(docs.hits("/oauth/client.json"), 1);
    clock.advance(23 * 3_600_000);
    assert.equal((await authorize(id)).page.status, 200);
    assert.equal(docs.hits("/oauth/client.json"), 1, "served from the cache within a day");
    clock.advance(3_600_000);
    docs.set("/oauth/client.json", { kind: "json", body: doc(id, { client_name: "Renamed Client" }) });
    const again = await authorize(id);
    assert.match(again.page.html, /Renamed Client/);
    assert.equal(docs.hits("/oauth/client.json"), 2, "fetched again after a day");
  });

  test("failures are never cached", async () => {
    const id = "https://app.example/flaky.json";
    docs.set("/flaky.json", { kind: "status", status: 500 });
    await refused(id, /HTTP 500/);
    docs.set("/flaky.json", { kind: "json", body: doc(id) });
    assert.equal((await authorize(id)).page.status, 200, "the next request fetches again");
    assert.equal(docs.hits("/flaky.json"), 2);
  });

  test("URL rules: https, a path, no credentials, no fragment, a hostname, canonical form", async () => {
    await refused("http://app.example/c.json", /must use https/);
    await refused("https://app.example/", /must have a path/);
    await refused("https://app.example", /must have a path|not registered/);
    await refused("https://user:pw@app.example/c.json", /credentials/);
    await refused("https://app.example/c.json#frag", /fragment/);
    await refused("https://93.184.216.34/c.json", /not an IP address/);
    await refused("https://[2606:2800:220:1:248:1893:25c8:1946]/c.json", /not an IP address/);
    await refused("https://APP.example/c.json", /as a URL parser prints it/);
    await refused("https://app.example:443/c.json", /as a URL parser prints it/);
    await refused("https://app.example/a/../c.json", /as a URL parser prints it/);
    await refused("https://app.example/./c.json", /as a URL parser prints it/);
    await refused("https://app.example/%2e%2e/c.json", /as a URL parser prints it/);
    assert.equal(docs.hits("/c.json"), 0, "nothing was fetched");
  });

  test("hosts that resolve to anything but public addresses are never fetched", async () => {
    const cases: Array<[string, RegExp]> = [
      ["loop.example", /127\.0\.0\.1 \(loopback\)/],
      ["private.example", /10\.0\.0\.7 \(private\)/],
      ["linklocal.example", /link-local/],
      ["cgnat.example", /CGNAT/],
      ["mapped.example", /IPv4-mapped/],
      ["mapped-public.example", /IPv4-mapped/],
      ["nat64.example", /NAT64/],
      ["v6loop.example", /loopback/],
      ["ula.example", /unique local/],
      ["multicast.example", /multicast/],
      ["nowhere.example", /request failed/],
    ];
    for (const [host, reason] of cases) {
      docs.set(`/${host}.json`, { kind: "json", body: doc(`https://${host}/${host}.json`) });
      await refused(`https://${host}/${host}.json`, reason);
      assert.equal(docs.hits(`/${host}.json`), 0, `${host} was not fetched`);
    }
  });

  test("redirects, compression, oversize (counted on bytes) and a wrong client_id inside are refused", async () => {
    docs.set("/moved.json", { kind: "redirect", to: "https://app.example/oauth/client.json" });
    await refused("https://app.example/moved.json", /redirect/);
    const zipped = "https://app.example/zipped.json";
    docs.set("/zipped.json", { kind: "gzip", body: doc(zipped) });
    await refused(zipped, /compressed \(gzip\)/);
    const big = "https://app.example/big.json";
    docs.set("/big.json", { kind: "chunked", body: doc(big, { pad: "x".repeat(64 * 1024) }) });
    await refused(big, /larger than 64 KB/);
    const fits = "https://app.example/fits.json";
    docs.set("/fits.json", { kind: "chunked", body: doc(fits, { pad: "x".repeat(60 * 1024) }) });
    assert.equal((await authorize(fits)).page.status, 200, "a document under 64 KB without Content-Length is read");
    docs.set("/other.json", { kind: "json", body: doc("https://app.example/someone-else.json") });
    await refused("https://app.example/other.json", /does not name its own URL/);
    docs.set("/secret.json", { kind: "json", body: doc("https://app.example/secret.json", { client_secret: "s" }) });
    await refused("https://app.example/secret.json", /client secret/);
    docs.set("/badredirect.json", { kind: "json", body: doc("https://app.example/badredirect.json", { redirect_uris: ["http://evil.example/cb"] }) });
    await refused("https://app.example/badredirect.json", /must use https/);
    docs.set("/notjson.json", { kind: "status", status: 404 });
    await refused("https://app.example/notjson.json", /HTTP 404/);
  });

  test("a document slower than 5 seconds is refused", { timeout: 30_000 }, async () => {
    const id = "https://app.example/slow.json";
    docs.set("/slow.json", { kind: "slow", afterMs: 7000, body: doc(id) });
    const started = Date.now();
    await refused(id, /within 5 seconds/);
    const took = Date.now() - started;
    assert.ok(took >= 4900 && took < 6900, `gave up after about 5 s: ${took} ms`);
  });
});
