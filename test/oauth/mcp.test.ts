// OAuth tokens on the MCP server (docs/oauth.md, docs/mcp.md): a tool call without a
// credential is a 401 whose WWW-Authenticate starts a strict client (oauth4webapi) down the whole
// flow; its token then calls tools through the MCP SDK client, metered and billed like the
// account's API keys; a disconnected or expired token is a 401 again. Then the MCP SDK client's
// own OAuth provider goes from a bare 401 to a tool call by itself, and refreshes.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import * as oauth from "oauth4webapi";
import { auth, UnauthorizedError, type OAuthClientProvider } from "@modelcontextprotocol/sdk/client/auth.js";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from "@modelcontextprotocol/sdk/shared/auth.js";
import { eachDatabase } from "../support/db.ts";
import { loadFixtures, W } from "../support/fixtures.ts";
import { debitsOf, expectStatus } from "../support/http.ts";
import { createClock, createCustomer, type TestServer } from "../support/server.ts";
import { connect, rpc } from "../mcp/support.ts";
import { startFakeDocuments } from "../support/fake-client-documents.ts";
import { answerConsent, CALLBACK, openConsent, startOAuthServer, tokenRequest } from "./support.ts";

const insecure = { [oauth.allowInsecureRequests]: true } as const;
const CALL = (name: string, args: Record<string, unknown>) => ({ jsonrpc: "2.0", id: 3, method: "tools/call", params: { name, arguments: args } });

/** The person at the consent page: approves with the account's API key; returns the callback URL. */
async function approve(url: string | URL, apiKey: string): Promise<URL> {
  const page = await openConsent(String(url));
  assert.equal(page.status, 200, page.html.slice(0, 500));
  const res = await answerConsent(page, { apiKey, decision: "approve" });
  assert.equal(res.status, 303, await res.text());
  return new URL(res.headers.get("location")!);
}

/** A headless MCP host: the SDK's OAuth provider interface, its browser step done over HTTP. */
class HeadlessHost implements OAuthClientProvider {
  info?: OAuthClientInformationMixed;
  stored?: OAuthTokens;
  verifier?: string;
  code?: string;
  redirects = 0;
  constructor(
    private apiKey: string,
    readonly clientMetadataUrl?: string,
  ) {}
  get redirectUrl() {
    return CALLBACK;
  }
  get clientMetadata(): OAuthClientMetadata {
    return { client_name: "SDK host", redirect_uris: [CALLBACK], grant_types: ["authorization_code", "refresh_token"], response_types: ["code"], token_endpoint_auth_method: "none" };
  }
  state() {
    return crypto.randomUUID();
  }
  clientInformation() {
    return this.info;
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.info = info;
  }
  tokens() {
    return this.stored;
  }
  saveTokens(tokens: OAuthTokens) {
    this.stored = tokens;
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier;
  }
  codeVerifier() {
    return this.verifier!;
  }
  async redirectToAuthorization(url: URL) {
    this.redirects++;
    this.code = (await approve(url, this.apiKey)).searchParams.get("code") ?? undefined;
  }
}

eachDatabase("OAuth tokens on the MCP server", (get) => {
  const clock = createClock("2026-11-20T12:00:30Z");
  let server: TestServer;
  let customer: { accountId: string; apiKey: string };

  before(async () => {
    await loadFixtures(get().db, clock.now());
    customer = await createCustomer(get().db, { packs: [{ pack: "Agent", quantity: 1 }], now: clock.now() });
    server = await startOAuthServer(get().db, { clock });
  });
  after(() => server.close());

  test("from a bare 401, oauth4webapi gets a token that the MCP SDK client calls tools with, billed to the account", async () => {
    const bare = await rpc(server.url, CALL("walletid_account_balance", {}));
    assert.equal(bare.status, 401);
    const challenge = bare.headers.get("www-authenticate") ?? "";
    const prmUrl = /resource_metadata="([^"]+)"/.exec(challenge)?.[1];
    assert.equal(prmUrl, `${server.url}/.well-known/oauth-protected-resource/mcp`, challenge);

    const resource = new URL(`${server.url}/mcp`);
    const rs = await oauth.processResourceDiscoveryResponse(resource, await oauth.resourceDiscoveryRequest(resource, insecure));
    const issuer = new URL(rs.authorization_servers![0]);
    const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: "oauth2", ...insecure }));
    const client = await oauth.processDynamicClientRegistrationResponse(
      await oauth.dynamicClientRegistrationRequest(as, { redirect_uris: [CALLBACK], token_endpoint_auth_method: "none", client_name: "strict host" }, insecure),
    );
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
    const params = oauth.validateAuthResponse(as, client, await approve(authz, customer.apiKey), state);
    const tokens = await oauth.processAuthorizationCodeResponse(
      as,
      client,
      await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, CALLBACK, verifier, { additionalParameters: { resource: resource.href }, ...insecure }),
    );

    const mcp = await connect("v1", server.url, tokens.access_token);
    try {
      const balance = await mcp.callTool("walletid_account_balance", {});
      assert.notEqual(balance.isError, true, balance.content[0]?.text);
      assert.equal(balance.structuredContent.credits.available, 12, JSON.stringify(balance.structuredContent));
      const before = await debitsOf(get().db, customer.accountId);
      const resolved = await mcp.callTool("walletid_resolve_wallets", { wallets: [W.full] });
      assert.notEqual(resolved.isError, true, resolved.content[0]?.text);
      assert.equal(resolved.structuredContent.billed_matches, 1);
      const debits = await debitsOf(get().db, customer.accountId);
      assert.equal(debits.length, before.length + 1, "the OAuth call debited the account's credits");
      const after = await mcp.callTool("walletid_account_balance", {});
      assert.equal(after.structuredContent.credits.available, 11, "the same balance the account's API keys see");
      const job = await mcp.callTool("walletid_submit_job", { wallets: [W.full, W.neverSeen] });
      assert.notEqual(job.isError, true, job.content[0]?.text);
      assert.equal(job.structuredContent.job.status, "completed", "an OAuth token runs jobs");
      const status = await mcp.callTool("walletid_job_status", { job_id: job.structuredContent.job.job_id });
      assert.equal(status.structuredContent.results.length, 2);
      const jobDebit = (await debitsOf(get().db, customer.accountId)).filter((d) => d.call_key === `job:${job.structuredContent.job.job_id}`);
      assert.equal(jobDebit.reduce((sum, d) => sum + d.matches, 0), 1, "the job billed the account once");
      const usage = await expectStatus(await server.request("/api/v1/usage?period=day", { key: customer.apiKey }), 200);
      assert.ok(usage.body.data.usage.total_requests >= 1, "usage is the account's");
      const rows = await get().db.query<{ internal: boolean }>(
        "SELECT k.internal FROM usage_counts u JOIN api_keys k ON k.id = u.key_id WHERE u.account_id = $1",
        [customer.accountId],
      );
      assert.ok(rows.some((r) => r.internal), "tool calls are recorded under the connection's hidden key");
    } finally {
      await mcp.close();
    }

    const list = await expectStatus(await server.request("/api/v1/connections", { key: customer.apiKey }), 200);
    const connection = list.body.data.find((c: any) => c.client_id === client.client_id);
    assert.ok(connection?.last_used_at, "the connection was used");
    await expectStatus(await server.request(`/api/v1/connections/${connection.id}`, { method: "DELETE", key: customer.apiKey }), 200);
    for (const message of [CALL("walletid_account_balance", {}), { jsonrpc: "2.0", id: 2, method: "tools/list", params: {} }]) {
      const revoked = await rpc(server.url, message, { Authorization: `Bearer ${tokens.access_token}` });
      assert.equal(revoked.status, 401, "a disconnected token is refused at once");
      assert.match(revoked.headers.get("www-authenticate") ?? "", /^Bearer resource_metadata="/);
    }
  });

  test("an access token expires after one hour (401 with WWW-Authenticate); its refresh token renews it", async () => {
    const host = new HeadlessHost(customer.apiKey);
    assert.equal(await auth(host, { serverUrl: `${server.url}/mcp` }), "REDIRECT");
    assert.equal(await auth(host, { serverUrl: `${server.url}/mcp`, authorizationCode: host.code }), "AUTHORIZED");
    const token = host.stored!.access_token;
    clock.advance(3_600_000);
    const expired = await rpc(server.url, CALL("walletid_account_balance", {}), { Authorization: `Bearer ${token}` });
    assert.equal(expired.status, 401);
    assert.match(expired.headers.get("www-authenticate") ?? "", /resource_metadata=/);
    const renewed = await expectStatus(await tokenRequest(server, { grant_type: "refresh_token", refresh_token: host.stored!.refresh_token!, client_id: (host.info as { client_id: string }).client_id }), 200);
    const ok = await rpc(server.url, CALL("walletid_account_balance", {}), { Authorization: `Bearer ${renewed.body.access_token}` });
    assert.equal(ok.status, 200, await ok.text());
  });

  test("the MCP SDK client's own OAuth provider: listing works bare, a tool call's 401 runs the flow, then the call succeeds", async () => {
    const host = new HeadlessHost(customer.apiKey);
    const endpoint = new URL(`${server.url}/mcp`);
    const client = new Client({ name: "sdk-oauth-host", version: "0.0.0" });
    const first = new StreamableHTTPClientTransport(endpoint, { authProvider: host });
    await client.connect(first);
    const { tools } = await client.listTools();
    assert.equal(tools.length, 10, "discovery works without a credential");
    await assert.rejects(client.callTool({ name: "walletid_account_balance", arguments: {} }), UnauthorizedError);
    assert.equal(host.redirects, 1, "the 401 sent the host through the consent page");
    assert.ok(host.code, "and brought back a code");
    assert.match(String((host.info as { client_id?: string })?.client_id), /^wid_client_/, "registered dynamically");
    await first.finishAuth(host.code!);
    assert.match(host.stored!.access_token, /^wid_mcp_/);
    await client.close();

    const again = new Client({ name: "sdk-oauth-host", version: "0.0.0" });
    await again.connect(new StreamableHTTPClientTransport(endpoint, { authProvider: host }));
    const result = (await again.callTool({ name: "walletid_account_balance", arguments: {} })) as { isError?: boolean; structuredContent?: any; content: Array<{ text?: string }> };
    assert.notEqual(result.isError, true, result.content[0]?.text);
    assert.equal(typeof result.structuredContent.credits.available, "number");

    // an hour later the SDK refreshes by itself on the 401, with a rotated refresh token
    const oldRefresh = host.stored!.refresh_token;
    clock.advance(3_600_000);
    const later = (await again.callTool({ name: "walletid_account_balance", arguments: {} })) as { isError?: boolean };
    assert.notEqual(later.isError, true);
    assert.notEqual(host.stored!.refresh_token, oldRefresh, "the refresh token rotated");
    assert.equal(host.redirects, 1, "no second trip through the consent page");
    await again.close();
  });

  test("the MCP SDK client with a client ID metadata document: no registration, the document's URL is the client_id", async () => {
    const docs = await startFakeDocuments();
    const documentUrl = "https://host.example/mcp/client.json";
    docs.set("/mcp/client.json", {
      kind: "json",
      body: { client_id: documentUrl, client_name: "Document host", redirect_uris: [CALLBACK], token_endpoint_auth_method: "none", grant_types: ["authorization_code", "refresh_token"] },
    });
    const cimd = await startOAuthServer(get().db, { clock, dns: { "host.example": ["93.184.216.34"] }, documentsAt: docs.url });
    try {
      const host = new HeadlessHost(customer.apiKey, documentUrl);
      const endpoint = new URL(`${cimd.url}/mcp`);
      const client = new Client({ name: "sdk-cimd-host", version: "0.0.0" });
      const transport = new StreamableHTTPClientTransport(endpoint, { authProvider: host });
      await client.connect(transport);
      await assert.rejects(client.callTool({ name: "walletid_index_stats", arguments: {} }), UnauthorizedError);
      assert.equal((host.info as { client_id: string }).client_id, documentUrl);
      await transport.finishAuth(host.code!);
      await client.close();
      const again = new Client({ name: "sdk-cimd-host", version: "0.0.0" });
      await again.connect(new StreamableHTTPClientTransport(endpoint, { authProvider: host }));
      const stats = (await again.callTool({ name: "walletid_index_stats", arguments: {} })) as { isError?: boolean; content: Array<{ text?: string }> };
      assert.notEqual(stats.isError, true, stats.content[0]?.text);
      await again.close();
      const list = await expectStatus(await cimd.request("/api/v1/connections", { key: customer.apiKey }), 200);
      assert.ok(list.body.data.some((c: any) => c.client_id === documentUrl && c.client_name === "Document host"));
      assert.equal(docs.hits("/mcp/client.json"), 1, "fetched once, then cached");
    } finally {
      await cimd.close();
      await docs.close();
    }
  });
});
