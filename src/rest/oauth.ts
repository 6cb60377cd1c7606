// OAuth 2.1 for MCP hosts at the site root: discovery (RFC 9728, RFC 8414), dynamic client
// registration (RFC 7591), the token endpoint and revocation (RFC 7009). The authorization
// endpoint and its consent page are in oauth-authorize.ts. Errors here are RFC 6749 JSON
// ({error, error_description}), as OAuth clients expect.
import { Hono, type Context } from "hono";
import { sql } from "../db/queries.ts";
import { readAtMost, tooLarge } from "../http/body.ts";
import { ApiError } from "../http/errors.ts";
import { isDatabaseUnavailable } from "../db/errors.ts";
import { registerClient } from "../oauth/clients.ts";
import { REGISTRATIONS_PER_HOUR, SCOPE, type OAuthDeps } from "../oauth/deps.ts";
import { exchangeCode, refreshTokens, revokeToken, type GrantResult } from "../oauth/grants.ts";
import { requestMeterer } from "../http/request-meter.ts";
import { accountConnections, endConnection } from "../operations/connections.ts";
import { meterDeps, type OperationDeps } from "../operations/deps.ts";
import { formParams, namesThisServer } from "../oauth/params.ts";
import { authorizeRoutes } from "./oauth-authorize.ts";

const NO_STORE = { "Cache-Control": "no-store", Pragma: "no-cache" };
const FORM_LIMIT = 16 * 1024;
/** How long the token endpoint waits for the database before answering 503. */
const TOKEN_DEADLINE_MS = 10_000;

export function oauthError(c: Context, status: 400 | 401 | 429 | 500 | 503, error: string, description: string, extra: Record<string, unknown> = {}, headers: Record<string, string> = {}) {
  return c.json({ error, error_description: description, ...extra }, status, { ...NO_STORE, ...headers });
}

/** The database did not answer in time: an error the caller renders as unavailable. */
function deadline<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(Object.assign(new Error(`no answer within ${ms} ms`), { code: "ETIMEDOUT" })), ms);
  });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}

async function readForm(c: Context): Promise<URLSearchParams | undefined> {
  const type = c.req.header("content-type")?.split(";")[0].trim().toLowerCase();
  if (type !== "application/x-www-form-urlencoded") return undefined;
  return new URLSearchParams(new TextDecoder().decode((await readAtMost(c.req.raw, FORM_LIMIT)) ?? tooLarge("16 KB")));
}

/** client_id from HTTP Basic (form-urlencoded per RFC 6749 2.3.1), when a client sends it that way. */
function basicClientId(c: Context): string | undefined {
  const header = c.req.header("authorization");
  const match = header && /^basic\s+([A-Za-z0-9+/=]+)$/i.exec(header.trim());
  if (!match) return undefined;
  try {
    const decoded = atob(match[1]);
    const id = decoded.slice(0, decoded.includes(":") ? decoded.indexOf(":") : undefined);
    return decodeURIComponent(id.replaceAll("+", " "));
  } catch {
    return undefined;
  }
}

export function authorizationServerMetadata(deps: OAuthDeps) {
  const site = deps.issuer;
  return {
    issuer: site,
    authorization_endpoint: `${site}/api/oauth/authorize`,
    token_endpoint: `${site}/api/oauth/token`,
    registration_endpoint: `${site}/api/oauth/register`,
    revocation_endpoint: `${site}/api/oauth/revoke`,
    response_types_supported: ["code"],
    response_modes_supported: ["query"],
    grant_types_supported: ["authorization_code", "refresh_token"],
    code_challenge_methods_supported: ["S256"],
    token_endpoint_auth_methods_supported: ["none"],
    revocation_endpoint_auth_methods_supported: ["none"],
    scopes_supported: [SCOPE],
    client_id_metadata_document_supported: true,
    authorization_response_iss_parameter_supported: true,
    service_documentation: `${site}/docs`,
  };
}

export function protectedResourceMetadata(deps: OAuthDeps) {
  return {
    resource: deps.resource,
    authorization_servers: [deps.issuer],
    scopes_supported: [SCOPE],
    bearer_methods_supported: ["header"],
    resource_name: "walletid",
    resource_documentation: `${deps.issuer}/docs`,
  };
}

function grantResponse(c: Context, result: GrantResult) {
  if (result.ok) return c.json(result.tokens, 200, NO_STORE);
  if (result.status === 503) return oauthError(c, 503, result.error, result.description, { token_rotated: true });
  if (result.status === 429) return oauthError(c, 429, result.error, result.description, {}, { "Retry-After": String(result.retryAfter) });
  return oauthError(c, result.status, result.error, result.description);
}

/** Mounted at the site root. */
export function oauthRoutes(deps: OAuthDeps) {
  const app = new Hono();

  for (const path of ["/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"]) {
    app.get(path, (c) => c.json(protectedResourceMetadata(deps)));
  }
  app.get("/.well-known/oauth-authorization-server", (c) => c.json(authorizationServerMetadata(deps)));

  app.post("/api/oauth/register", async (c) => {
    const bucket = `register:${deps.clientAddress(c.req.raw, c.env)}`;
    const [count] = await deps.db.query<{ used: number; window_start: Date }>(sql("oauth_request_counts_hit"), [bucket, deps.now(), 3600]);
    if (count.used > REGISTRATIONS_PER_HOUR) {
      const retryAfter = Math.max(1, Math.ceil((new Date(count.window_start).getTime() + 3_600_000 - deps.now().getTime()) / 1000));
      return oauthError(c, 429, "slow_down", `Too many registrations from this address: at most ${REGISTRATIONS_PER_HOUR} an hour`, {}, { "Retry-After": String(retryAfter) });
    }
    let metadata: unknown;
    try {
      metadata = JSON.parse(new TextDecoder().decode((await readAtMost(c.req.raw, FORM_LIMIT)) ?? tooLarge("16 KB")));
    } catch (err) {
      if (err instanceof ApiError) return oauthError(c, 400, "invalid_client_metadata", "The client metadata is larger than 16 KB");
      return oauthError(c, 400, "invalid_client_metadata", "The body must be a JSON object of client metadata");
    }
    const registered = await registerClient(deps, metadata);
    if (!registered.ok) return oauthError(c, 400, registered.error, registered.description);
    return c.json(registered.body, 201, NO_STORE);
  });

  app.post("/api/oauth/token", async (c) => {
    const form = await readForm(c).catch(() => undefined);
    if (!form) return oauthError(c, 400, "invalid_request", "Send the token request as application/x-www-form-urlencoded, at most 16 KB");
    const params = formParams(form);
    if (params.repeated) return oauthError(c, 400, "invalid_request", `Parameter ${params.repeated} is repeated`);
    const basic = basicClientId(c);
    const bodyClient = params.get("client_id");
    if (basic !== undefined && bodyClient !== undefined && basic !== bodyClient) {
      return oauthError(c, 400, "invalid_request", "client_id differs between the Authorization header and the body");
    }
    const clientId = bodyClient ?? basic;
    if (!params.resources.every((r) => namesThisServer(deps, r))) {
      return oauthError(c, 400, "invalid_target", `resource must name this server's MCP endpoint, ${deps.resource}`);
    }
    const grantType = params.get("grant_type");
    try {
      if (grantType === "authorization_code") {
        const code = params.get("code");
        if (!code) return oauthError(c, 400, "invalid_request", "code is required");
        return grantResponse(
          c,
          await deadline(exchangeCode(deps, { code, clientId, redirectUri: params.get("redirect_uri"), codeVerifier: params.get("code_verifier") }), TOKEN_DEADLINE_MS),
        );
      }
      if (grantType === "refresh_token") {
        const refreshToken = params.get("refresh_token");
        if (!refreshToken) return oauthError(c, 400, "invalid_request", "refresh_token is required");
        return grantResponse(c, await deadline(refreshTokens(deps, { refreshToken, clientId }), TOKEN_DEADLINE_MS));
      }
    } catch (err) {
      if (!isDatabaseUnavailable(err)) throw err;
      deps.log(`oauth: token endpoint unavailable: ${(err as Error).message}`, "warn");
      return oauthError(c, 503, "temporarily_unavailable", "The token service is briefly unavailable: retry shortly with the same request", {}, { "Retry-After": "5" });
    }
    if (!grantType) return oauthError(c, 400, "invalid_request", "grant_type is required");
    return oauthError(c, 400, "unsupported_grant_type", "grant_type must be authorization_code or refresh_token");
  });

  app.post("/api/oauth/revoke", async (c) => {
    const form = await readForm(c).catch(() => undefined);
    if (!form) return oauthError(c, 400, "invalid_request", "Send the revocation request as application/x-www-form-urlencoded, at most 16 KB");
    const params = formParams(form);
    if (params.repeated) return oauthError(c, 400, "invalid_request", `Parameter ${params.repeated} is repeated`);
    const token = params.get("token");
    if (!token) return oauthError(c, 400, "invalid_request", "token is required");
    await revokeToken(deps, { token, clientId: params.get("client_id") ?? basicClientId(c) });
    // RFC 7009: an unknown or already revoked token answers 200 too
    return c.body(null, 200, NO_STORE);
  });

  app.route("/", authorizeRoutes(deps));
  return app;
}

/** GET and DELETE {base_url}/connections: API key only (the metering refuses OAuth tokens), free. */
export function connectionRoutes(deps: OperationDeps) {
  const app = new Hono();

  app.get("/connections", async (c) => {
    const listed = await accountConnections(deps, requestMeterer(c, meterDeps(deps)));
    if (!listed.ok) throw listed.refusal;
    return c.json({ data: listed.data, meta: { count: listed.data.length } });
  });

  app.delete("/connections/:id", async (c) => {
    const ended = await endConnection(deps, requestMeterer(c, meterDeps(deps)), { id: c.req.param("id") });
    if (!ended.ok) throw ended.refusal;
    return c.json({ data: { id: ended.id, disconnected: true }, meta: { disconnected_at: ended.endedAt.toISOString() } });
  });

  return app;
}
