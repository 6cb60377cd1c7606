// GET/POST {site_url}/api/oauth/authorize: checks the authorization request, shows the consent
// page, and answers the person's decision. A request whose client or redirect cannot be trusted
// is answered on the page; other errors and declines go to the client's callback only when it
// is loopback or on OAUTH_TRUSTED_CALLBACK_HOST, and are shown on the page otherwise.
import { Hono, type Context } from "hono";
import { sql } from "../db/queries.ts";
import { readAtMost, tooLarge } from "../http/body.ts";
import { isApiKeyShape, sha256Hex } from "../ledger/keys.ts";
import { findClient, matchRedirectUri, type OAuthClient } from "../oauth/clients.ts";
import { isLoopbackRedirect } from "../oauth/redirect-uris.ts";
import { renderConsentPage, renderMessagePage } from "../oauth/consent-page.ts";
import { CONSENT_PAGES_PER_HOUR, CONSENT_TTL_MS, SCOPE, type OAuthDeps } from "../oauth/deps.ts";
import { issueCode } from "../oauth/grants.ts";
import { formParams, namesThisServer } from "../oauth/params.ts";
import { constantTimeEqual, isCodeChallengeShape, randomToken, tokenHash } from "../oauth/secrets.ts";

const PATH = "/api/oauth/authorize";
const ALLOWED_SCOPES = new Set([SCOPE, "offline_access"]);

/** Headers of every page: nothing from elsewhere, no framing, no caching, no referrer. */
function pageHeaders(formTargets: string[] = []): Record<string, string> {
  return {
    "Content-Security-Policy": `default-src 'none'; style-src 'unsafe-inline'; form-action 'self' ${formTargets.join(" ")}; frame-ancestors 'none'; base-uri 'none'`.replace(/\s+;/g, ";"),
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
  };
}

function showError(c: Context, status: 400 | 403, message: string) {
  return c.html(renderMessagePage("This connection cannot continue", message), status, pageHeaders());
}

function callbackUrl(deps: OAuthDeps, redirectUri: string, params: Record<string, string | undefined>): string {
  const url = new URL(redirectUri);
  for (const [name, value] of Object.entries(params)) if (value !== undefined) url.searchParams.set(name, value);
  url.searchParams.set("iss", deps.issuer);
  return url.toString();
}

/** Errors and declines may go to loopback callbacks and to the one configured hosted-client domain. */
function trustedCallback(deps: OAuthDeps, redirectUri: string): boolean {
  const url = new URL(redirectUri);
  if (isLoopbackRedirect(url)) return true;
  return deps.trustedCallbackHost !== undefined && url.protocol === "https:" && url.hostname === deps.trustedCallbackHost.toLowerCase();
}

function clientHost(client: OAuthClient, redirectUri: string): string {
  return new URL(client.source === "document" ? client.clientId : redirectUri).hostname;
}

function cookieName(consentId: string): string {
  return `wid_consent_${consentId.replaceAll("-", "")}`;
}

function readCookie(c: Context, name: string): string | undefined {
  for (const part of (c.req.header("cookie") ?? "").split(";")) {
    const eq = part.indexOf("=");
    if (eq !== -1 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

type ConsentRow = {
  id: string;
  client_id: string;
  redirect_uri: string;
  code_challenge: string;
  state: string | null;
  scope: string;
  resource: string;
  csrf_hash: string;
  client_name: string | null;
  source: "registered" | "document";
  redirect_uris: string[];
};

function consentPage(deps: OAuthDeps, consent: ConsentRow, csrf: string, error?: string) {
  const client: OAuthClient = {
    clientId: consent.client_id,
    source: consent.source,
    clientName: consent.client_name ?? undefined,
    redirectUris: consent.redirect_uris,
  };
  const host = clientHost(client, consent.redirect_uri);
  return renderConsentPage({
    clientName: client.clientName ?? host,
    clientHost: host,
    redirectUri: consent.redirect_uri,
    loopbackOnly: client.redirectUris.every((u) => isLoopbackRedirect(new URL(u))),
    consentId: consent.id,
    csrf,
    action: `${deps.issuer}${PATH}`,
    error,
  });
}

export function authorizeRoutes(deps: OAuthDeps) {
  const app = new Hono();

  app.get(PATH, async (c) => {
    // every page may fetch a metadata document and stores a consent: counted per address first
    const [count] = await deps.db.query<{ used: number; window_start: Date }>(sql("oauth_request_counts_hit"), [
      `authorize:${deps.clientAddress(c.req.raw, c.env)}`,
      deps.now(),
      3600,
    ]);
    if (count.used > CONSENT_PAGES_PER_HOUR) {
      const retryAfter = Math.max(1, Math.ceil((new Date(count.window_start).getTime() + 3_600_000 - deps.now().getTime()) / 1000));
      return c.html(
        renderMessagePage("Too many requests", `Too many authorization requests from your address: at most ${CONSENT_PAGES_PER_HOUR} an hour. Try again in ${Math.ceil(retryAfter / 60)} minutes.`),
        429,
        { ...pageHeaders(), "Retry-After": String(retryAfter) },
      );
    }
    const params = formParams(new URL(c.req.url).searchParams);
    if (params.repeated === "client_id" || params.repeated === "redirect_uri") {
      return showError(c, 400, `The authorization request repeats ${params.repeated}: start the connection again from the app`);
    }
    const clientId = params.get("client_id");
    if (!clientId) return showError(c, 400, "The authorization request has no client_id: start the connection again from the app");
    const found = await findClient(deps, clientId);
    if (!found.ok) return showError(c, 400, found.reason);
    const redirectUri = params.get("redirect_uri");
    if (!redirectUri) return showError(c, 400, "The authorization request has no redirect_uri");
    if (!matchRedirectUri(found.client, redirectUri)) {
      return showError(c, 400, `The redirect_uri ${redirectUri} is not one this client declared`);
    }

    const state = params.repeated === "state" ? undefined : params.get("state");
    const refuse = (error: string, description: string) =>
      trustedCallback(deps, redirectUri)
        ? c.redirect(callbackUrl(deps, redirectUri, { error, error_description: description, state }), 302)
        : showError(c, 400, `${description}. The app that sent you here made a faulty request: tell its makers.`);
    if (params.repeated) return refuse("invalid_request", `Parameter ${params.repeated} is repeated`);
    if (params.get("response_type") !== "code") return refuse("unsupported_response_type", "response_type must be code");
    if (params.get("code_challenge_method") !== "S256") return refuse("invalid_request", "PKCE is required: code_challenge_method must be S256");
    const challenge = params.get("code_challenge");
    if (!challenge || !isCodeChallengeShape(challenge)) return refuse("invalid_request", "code_challenge must be a S256 challenge (43 characters)");
    if (!params.resources.every((r) => namesThisServer(deps, r))) {
      return refuse("invalid_target", `resource must name this server's MCP endpoint, ${deps.resource}`);
    }
    const scopes = (params.get("scope") ?? SCOPE).split(" ").filter(Boolean);
    if (!scopes.every((s) => ALLOWED_SCOPES.has(s))) return refuse("invalid_scope", `The only scope is ${SCOPE}`);
    if (state !== undefined && state.length > 2000) return refuse("invalid_request", "state is longer than 2000 characters");

    const consentId = crypto.randomUUID();
    const csrf = randomToken();
    await deps.db.query(sql("oauth_consents_insert"), [
      consentId,
      clientId,
      redirectUri,
      challenge,
      state ?? null,
      SCOPE,
      deps.resource,
      await tokenHash(csrf),
      deps.now(),
    ]);
    const secure = deps.issuer.startsWith("https:") ? "; Secure" : "";
    c.header("Set-Cookie", `${cookieName(consentId)}=${csrf}; Path=${PATH}; Max-Age=${CONSENT_TTL_MS / 1000}; HttpOnly; SameSite=Strict${secure}`);
    const [consent] = await deps.db.query<ConsentRow>(sql("oauth_consents_select"), [consentId, new Date(deps.now().getTime() - CONSENT_TTL_MS)]);
    return c.html(consentPage(deps, consent, csrf), 200, pageHeaders([new URL(redirectUri).origin]));
  });

  app.post(PATH, async (c) => {
    const type = c.req.header("content-type")?.split(";")[0].trim().toLowerCase();
    if (type !== "application/x-www-form-urlencoded") return showError(c, 400, "The consent form was not sent as a form");
    const params = formParams(new URLSearchParams(new TextDecoder().decode((await readAtMost(c.req.raw, 16 * 1024)) ?? tooLarge("16 KB"))));
    if (params.repeated || params.resources.length > 0) return showError(c, 400, "The consent form repeats a field: open the page again from the app");
    const consentId = params.get("consent") ?? "";
    const csrf = params.get("csrf") ?? "";
    if (!/^[0-9a-f-]{36}$/.test(consentId)) return showError(c, 400, "The consent form is incomplete: open the page again from the app");
    const [consent] = await deps.db.query<ConsentRow>(sql("oauth_consents_select"), [consentId, new Date(deps.now().getTime() - CONSENT_TTL_MS)]);
    if (!consent) return showError(c, 400, "This consent page has expired or was already answered: start the connection again from the app");
    const cookie = readCookie(c, cookieName(consentId));
    if (!cookie || !constantTimeEqual(cookie, csrf) || !constantTimeEqual(await tokenHash(csrf), consent.csrf_hash)) {
      return showError(c, 403, "This form could not be verified as coming from this page: open the page again from the app");
    }
    const state = consent.state ?? undefined;
    const formTargets = pageHeaders([new URL(consent.redirect_uri).origin]);
    const clearCookie = `${cookieName(consentId)}=; Path=${PATH}; Max-Age=0; HttpOnly; SameSite=Strict`;

    const decision = params.get("decision");
    if (decision === "decline") {
      await deps.db.query(sql("oauth_consents_take"), [consentId]);
      c.header("Set-Cookie", clearCookie);
      if (trustedCallback(deps, consent.redirect_uri)) {
        return c.redirect(callbackUrl(deps, consent.redirect_uri, { error: "access_denied", error_description: "The person declined", state }), 303);
      }
      return c.html(renderMessagePage("You declined", "Nothing was connected. You can close this window."), 200, pageHeaders());
    }
    if (decision !== "approve") return c.html(consentPage(deps, consent, csrf, "Choose Approve or Decline."), 400, formTargets);

    const apiKey = (params.get("api_key") ?? "").trim();
    const [key] = isApiKeyShape(apiKey) ? await deps.db.query<{ account_id: string }>(sql("oauth_consent_key_select"), [await sha256Hex(apiKey)]) : [];
    if (!key) {
      return c.html(consentPage(deps, consent, csrf, "That API key is not valid. Paste an active key of your account (it starts wid_live_)."), 401, formTargets);
    }
    const taken = await deps.db.query(sql("oauth_consents_take"), [consentId]);
    if (taken.length === 0) return showError(c, 400, "This consent page was already answered");
    const code = await issueCode(deps, {
      clientId: consent.client_id,
      accountId: key.account_id,
      redirectUri: consent.redirect_uri,
      codeChallenge: consent.code_challenge,
      scope: consent.scope,
      resource: consent.resource,
    });
    c.header("Set-Cookie", clearCookie);
    for (const [name, value] of Object.entries(pageHeaders())) c.header(name, value);
    return c.redirect(callbackUrl(deps, consent.redirect_uri, { code, state }), 303);
  });

  return app;
}
