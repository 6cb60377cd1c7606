// Helpers for the OAuth suites: a server whose outbound module (src/outbound-node.ts) has an
// injected resolver and connects the address it checked to a real HTTP server on 127.0.0.1 (the
// https metadata-document URLs keep every rule; only the bytes come from the fake), and a person
// who answers the consent page over HTTP (GET the page, submit its form with an API key).
import assert from "node:assert/strict";
import { connect } from "node:net";
import { createNodeOutbound } from "../../src/outbound-node.ts";
import type { Db } from "../../src/db/types.ts";
import { pkceChallenge, randomToken } from "../../src/oauth/secrets.ts";
import { expectStatus } from "../support/http.ts";
import { startServer, type Clock, type TestServer } from "../support/server.ts";

export const CALLBACK = "http://127.0.0.1:9999/callback";

export interface OAuthServerOptions {
  clock?: Clock;
  env?: Record<string, string>;
  /** hostname -> addresses the injected resolver answers */
  dns?: Record<string, string[]>;
  /** base URL (http://127.0.0.1:port) that https document URLs are fetched from */
  documentsAt?: string;
}

export async function startOAuthServer(db: Db, options: OAuthServerOptions = {}): Promise<TestServer> {
  const dns = options.dns ?? {};
  const outbound = createNodeOutbound({
    lookup: async (hostname) => {
      const answer = dns[hostname];
      if (!answer) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: "ENOTFOUND" });
      return answer;
    },
    // plain TCP to the fake, whatever address passed the rules
    connect: () => {
      if (!options.documentsAt) throw new Error("no document server in this suite");
      return connect(Number(new URL(options.documentsAt).port), "127.0.0.1");
    },
  });
  const server = await startServer(db, { selfUrl: true, clock: options.clock, env: options.env, app: { outbound } });
  return {
    ...server,
    close: async () => {
      await server.close();
      await outbound.close();
    },
  };
}

export async function register(server: TestServer, metadata: Record<string, unknown> = {}): Promise<{ client_id: string; [k: string]: unknown }> {
  const res = await server.request("/api/oauth/register", {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ redirect_uris: [CALLBACK], client_name: "Test host", token_endpoint_auth_method: "none", ...metadata }),
  });
  return (await expectStatus(res, 201, "registration")).body;
}

export interface ConsentPage {
  status: number;
  html: string;
  headers: Headers;
  /** the form's hidden inputs */
  hidden: Record<string, string>;
  action: string;
  cookie: string;
}

/** GETs an authorization URL as a browser would; the consent page when it answers 200. */
export async function openConsent(url: string): Promise<ConsentPage> {
  const res = await fetch(url, { redirect: "manual" });
  const html = await res.text();
  const hidden: Record<string, string> = {};
  for (const m of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) hidden[m[1]] = m[2];
  const action = /<form method="post" action="([^"]+)"/.exec(html)?.[1] ?? "";
  const cookie = (res.headers.get("set-cookie") ?? "").split(";")[0];
  return { status: res.status, html, headers: res.headers, hidden, action, cookie };
}

/** Submits the consent form (every hidden input, api_key and decision); returns the response unfollowed. */
export async function answerConsent(page: ConsentPage, answer: { apiKey?: string; decision: "approve" | "decline"; cookie?: string }): Promise<Response> {
  const body = new URLSearchParams({ ...page.hidden, api_key: answer.apiKey ?? "", decision: answer.decision });
  return await fetch(page.action.replaceAll("&#47;", "/"), {
    method: "POST",
    redirect: "manual",
    headers: { "Content-Type": "application/x-www-form-urlencoded", Cookie: answer.cookie ?? page.cookie },
    body,
  });
}

export function authorizeUrl(server: TestServer, params: Record<string, string | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined) q.append(k, v);
  return `${server.url}/api/oauth/authorize?${q}`;
}

export interface Pkce {
  verifier: string;
  challenge: string;
}

export async function pkce(): Promise<Pkce> {
  const verifier = randomToken();
  return { verifier, challenge: await pkceChallenge(verifier) };
}

/** Registers (unless given a client), approves with `apiKey`, and returns the code and the verifier. */
export async function approvedCode(
  server: TestServer,
  options: { apiKey: string; clientId?: string; redirectUri?: string; state?: string },
): Promise<{ code: string; verifier: string; clientId: string; redirectUri: string; location: URL }> {
  const clientId = options.clientId ?? (await register(server)).client_id;
  const redirectUri = options.redirectUri ?? CALLBACK;
  const { verifier, challenge } = await pkce();
  const page = await openConsent(
    authorizeUrl(server, {
      response_type: "code",
      client_id: clientId,
      redirect_uri: redirectUri,
      code_challenge: challenge,
      code_challenge_method: "S256",
      state: options.state ?? "s1",
      resource: `${server.config.publicUrl}/mcp`,
    }),
  );
  assert.equal(page.status, 200, `consent page: ${page.html.slice(0, 500)}`);
  const res = await answerConsent(page, { apiKey: options.apiKey, decision: "approve" });
  assert.equal(res.status, 303, `approval redirects: ${await res.text()}`);
  const location = new URL(res.headers.get("location")!);
  const code = location.searchParams.get("code");
  assert.ok(code, `a code in ${location}`);
  return { code, verifier, clientId, redirectUri, location };
}

/** POSTs a form to the token endpoint. */
export async function tokenRequest(server: TestServer, params: Record<string, string | string[]>): Promise<Response> {
  const body = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) for (const one of [v].flat()) body.append(k, one);
  return await server.request("/api/oauth/token", {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded" },
    body,
  });
}

export async function exchange(server: TestServer, got: { code: string; verifier: string; clientId: string; redirectUri: string }) {
  const res = await tokenRequest(server, {
    grant_type: "authorization_code",
    code: got.code,
    code_verifier: got.verifier,
    client_id: got.clientId,
    redirect_uri: got.redirectUri,
    resource: `${server.config.publicUrl}/mcp`,
  });
  return (await expectStatus(res, 200, "code exchange")).body as { access_token: string; refresh_token: string };
}
