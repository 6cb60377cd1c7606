// What the OpenAPI document says of the OAuth endpoints and of the connections API.
import * as v from "valibot";
import type { Operation } from "../openapi/operation.ts";

const Url = v.pipe(v.string(), v.url());
const Timestamp = v.pipe(v.string(), v.isoTimestamp());

const ProtectedResource = v.looseObject({
  resource: v.pipe(Url, v.description("`{site_url}/mcp`, exactly")),
  authorization_servers: v.array(Url),
  scopes_supported: v.array(v.literal("mcp")),
  bearer_methods_supported: v.array(v.literal("header")),
});

const AuthorizationServer = v.looseObject({
  issuer: v.pipe(Url, v.description("`{site_url}`, exactly; also the `iss` of every authorization response")),
  authorization_endpoint: Url,
  token_endpoint: Url,
  registration_endpoint: Url,
  revocation_endpoint: Url,
  response_types_supported: v.array(v.literal("code")),
  grant_types_supported: v.array(v.picklist(["authorization_code", "refresh_token"])),
  code_challenge_methods_supported: v.array(v.literal("S256")),
  token_endpoint_auth_methods_supported: v.array(v.literal("none")),
  scopes_supported: v.array(v.literal("mcp")),
  client_id_metadata_document_supported: v.literal(true),
  authorization_response_iss_parameter_supported: v.literal(true),
});

const RegistrationRequest = v.looseObject({
  redirect_uris: v.pipe(v.array(v.string()), v.description("1 to 10; https, or http on localhost, 127.0.0.1 or [::1] (any port at authorization)")),
  client_name: v.optional(v.pipe(v.string(), v.maxLength(200))),
  grant_types: v.optional(v.pipe(v.array(v.string()), v.description("must include authorization_code; only authorization_code and refresh_token are kept"))),
  response_types: v.optional(v.array(v.string())),
  token_endpoint_auth_method: v.optional(v.pipe(v.string(), v.description("always registered as `none`: public clients only, no secret is issued"))),
  application_type: v.optional(v.picklist(["native", "web"])),
});

const Registered = v.looseObject({
  client_id: v.pipe(v.string(), v.description("Generated; never URL-shaped")),
  client_id_issued_at: v.number(),
  redirect_uris: v.array(v.string()),
  grant_types: v.array(v.picklist(["authorization_code", "refresh_token"])),
  response_types: v.array(v.literal("code")),
  token_endpoint_auth_method: v.literal("none"),
  scope: v.literal("mcp"),
});

const TokenRequest = v.object({
  grant_type: v.picklist(["authorization_code", "refresh_token"]),
  code: v.optional(v.pipe(v.string(), v.description("authorization_code: the code of the callback (valid one minute, single use)"))),
  redirect_uri: v.optional(v.pipe(v.string(), v.description("authorization_code: exactly the one of the authorization request"))),
  code_verifier: v.optional(v.pipe(v.string(), v.description("authorization_code: the PKCE verifier (S256)"))),
  refresh_token: v.optional(v.pipe(v.string(), v.description("refresh_token: `wid_mcr_…`; rotated on every use"))),
  client_id: v.optional(v.pipe(v.string(), v.description("The client's id (public clients); a refresh from another client is refused"))),
  resource: v.optional(v.pipe(v.string(), v.description("May repeat; every value must be `{site_url}/mcp`"))),
});

const Tokens = v.object({
  access_token: v.pipe(v.string(), v.description("`wid_mcp_` + 43 URL-safe characters; one hour")),
  token_type: v.literal("Bearer"),
  expires_in: v.literal(3600),
  refresh_token: v.pipe(v.string(), v.description("`wid_mcr_` + 43 URL-safe characters; replaces the one sent")),
  scope: v.literal("mcp"),
});

const RevokeRequest = v.object({
  token: v.pipe(v.string(), v.description("An access or refresh token of the connection; either ends the whole connection")),
  token_type_hint: v.optional(v.string()),
  client_id: v.optional(v.string()),
});

const ConsentForm = v.object({
  consent: v.pipe(v.string(), v.description("Hidden input of the page")),
  csrf: v.pipe(v.string(), v.description("Hidden input of the page; must match the page's cookie")),
  api_key: v.pipe(v.string(), v.description("An active API key of the account being connected; checked, never stored")),
  decision: v.picklist(["approve", "decline"]),
});

export const ConnectionSchema = v.object({
  id: v.pipe(v.string(), v.uuid()),
  client_id: v.string(),
  client_name: v.nullable(v.string()),
  created_at: Timestamp,
  last_used_at: v.nullable(Timestamp),
});

export const ConnectionParams = v.object({ id: v.pipe(v.string(), v.description("The connection's id, from GET /connections")) });

const AUTHORIZE_QUERY = v.object({
  response_type: v.literal("code"),
  client_id: v.pipe(v.string(), v.description("A registered client_id, or the https URL of the client's metadata document")),
  redirect_uri: v.string(),
  code_challenge: v.pipe(v.string(), v.description("the base64url SHA-256 digest of code_verifier")),
  code_challenge_method: v.literal("S256"),
  state: v.optional(v.string()),
  scope: v.optional(v.pipe(v.string(), v.description("`mcp` (the default)"))),
  resource: v.optional(v.pipe(v.string(), v.description("`{site_url}/mcp` (the default); may repeat with that value only"))),
});

const prm = (path: string, operationId: string): Operation => ({
  method: "get",
  path,
  site: true,
  operationId,
  head: true,
  tag: "OAuth",
  summary: "Protected resource metadata (RFC 9728)",
  description: "Where an MCP host starts: names the MCP endpoint `{site_url}/mcp` and its authorization server. Public.",
  auth: false,
  success: { status: 200, description: "The metadata", schema: ProtectedResource },
  errors: [],
});

export const oauthOpenapi: Operation[] = [
  prm("/.well-known/oauth-protected-resource/mcp", "protectedResourceMetadataMcp"),
  prm("/.well-known/oauth-protected-resource", "protectedResourceMetadata"),
  {
    method: "get",
    path: "/.well-known/oauth-authorization-server",
    site: true,
    operationId: "authorizationServerMetadata",
    head: true,
    tag: "OAuth",
    summary: "Authorization server metadata (RFC 8414)",
    description: "Endpoints and capabilities: code flow with PKCE S256 only, public clients, dynamic registration and client ID metadata documents, `iss` on every authorization response. Public.",
    auth: false,
    success: { status: 200, description: "The metadata", schema: AuthorizationServer },
    errors: [],
  },
  {
    method: "post",
    path: "/api/oauth/register",
    site: true,
    operationId: "registerClient",
    tag: "OAuth",
    summary: "Dynamic client registration (RFC 7591)",
    description: "Registers a public client: no secret is issued. Keeps the grant types authorization_code and refresh_token, drops others, and refuses a registration without authorization_code. At most 20 registrations an hour per IP address.",
    auth: false,
    oauthErrors: true,
    body: RegistrationRequest,
    success: { status: 201, description: "The registered metadata", schema: Registered, headers: ["Cache-Control"] },
    errors: [
      { status: 400, codes: ["invalid_client_metadata", "invalid_redirect_uri"] },
      { status: 429, codes: ["slow_down"] },
    ],
  },
  {
    method: "get",
    path: "/api/oauth/authorize",
    site: true,
    operationId: "authorize",
    tag: "OAuth",
    summary: "Authorization endpoint: the consent page",
    description: "Checks the request (client, exact redirect, loopback any port; S256 PKCE; resource `{site_url}/mcp`; no repeated parameters) and shows the consent page: who asks, what it may do, a field for one of the account's API keys, Approve and Decline. Errors go to the client's callback (with `state` and `iss`) only for loopback callbacks and OAUTH_TRUSTED_CALLBACK_HOST; otherwise they are shown on the page. At most 120 an hour per IP address.",
    auth: false,
    oauthErrors: true,
    query: AUTHORIZE_QUERY,
    success: { status: 200, description: "The consent page (no scripts, frame-ancestors 'none', a CSRF cookie)", html: true },
    errors: [
      { status: 400, codes: ["invalid_request"] },
      { status: 429, codes: ["too_many_requests"] },
    ],
  },
  {
    method: "post",
    path: "/api/oauth/authorize",
    site: true,
    operationId: "authorizeDecision",
    tag: "OAuth",
    summary: "The consent page's answer",
    description: "Approve (with a valid API key of the account) redirects to the callback with `code` (valid one minute), `state` and `iss`; Decline redirects with `error=access_denied` where errors may go to the callback, and shows a page otherwise. An invalid key shows the page again (401).",
    auth: false,
    oauthErrors: true,
    formBody: ConsentForm,
    success: { status: 303, description: "To the client's callback", empty: true, headers: ["Location"] },
    errors: [
      { status: 400, codes: ["invalid_request"] },
      { status: 401, codes: ["access_denied"] },
      { status: 403, codes: ["invalid_request"] },
    ],
  },
  {
    method: "post",
    path: "/api/oauth/token",
    site: true,
    operationId: "token",
    tag: "OAuth",
    summary: "Token endpoint",
    description: "authorization_code (with the PKCE verifier and the same redirect_uri; a replayed code ends what it issued) or refresh_token (rotated on every use; from the same client_id or none). A refresh token rotated out less than 30 seconds ago answers 503 `temporarily_unavailable` with `token_rotated: true` and no tokens: use the tokens the other request received. Later, a replaced token ends the connection (400 invalid_grant). A database that does not answer gives 503 with Retry-After and no `token_rotated`. At most 30 token requests a minute per connection.",
    auth: false,
    oauthErrors: true,
    formBody: TokenRequest,
    success: { status: 200, description: "New tokens", schema: Tokens, headers: ["Cache-Control"] },
    errors: [
      { status: 400, codes: ["invalid_request", "invalid_grant", "invalid_target", "unsupported_grant_type"] },
      { status: 429, codes: ["slow_down"] },
      { status: 503, codes: ["temporarily_unavailable"] },
    ],
  },
  {
    method: "post",
    path: "/api/oauth/revoke",
    site: true,
    operationId: "revokeToken",
    tag: "OAuth",
    summary: "Token revocation (RFC 7009)",
    description: "Ends the connection of the token at once: its access and refresh tokens stop together. Answers 200 for unknown tokens too.",
    auth: false,
    oauthErrors: true,
    formBody: RevokeRequest,
    success: { status: 200, description: "Revoked (or nothing to revoke)", empty: true, headers: ["Cache-Control"] },
    errors: [{ status: 400, codes: ["invalid_request"] }],
  },
];

export const connectionsOpenapi: Operation[] = [
  {
    method: "get",
    path: "/connections",
    operationId: "listConnections",
    tag: "Account",
    summary: "The account's OAuth connections",
    description: "MCP hosts connected by OAuth and not disconnected. API key only (an OAuth token cannot list or end connections). Free on both meters.",
    auth: true,
    success: {
      status: 200,
      description: "The connections, oldest first",
      schema: v.object({ data: v.array(ConnectionSchema), meta: v.object({ count: v.number() }) }),
    },
    errors: [],
  },
  {
    method: "delete",
    path: "/connections/{id}",
    operationId: "disconnect",
    tag: "Account",
    summary: "Disconnect an OAuth connection",
    description: "Ends the connection at once: its access token answers 401 and its refresh token is refused. A connection of another account is 404 like an unknown id. API key only; free.",
    auth: true,
    params: ConnectionParams,
    success: {
      status: 200,
      description: "The connection ended",
      schema: v.object({ data: v.object({ id: v.string(), disconnected: v.literal(true) }), meta: v.object({ disconnected_at: Timestamp }) }),
    },
    errors: [{ status: 404, codes: ["CONNECTION_NOT_FOUND"] }],
  },
];
