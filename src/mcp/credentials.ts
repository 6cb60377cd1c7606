// The credential step of the MCP server: who a request to {site_url}/mcp comes from, decided once
// per HTTP request before any MCP work, from the Authorization header alone.
//
// SEAM FOR OAUTH (issue 12). The OAuth issue plugs its access tokens in here and nowhere else:
//
//   createApp({ db, config, ..., verifyAccessToken })   // AppDeps.verifyAccessToken, optional
//
//   type VerifyAccessToken = (token: string) => Promise<
//     | { ok: true; accountId: string; keyHash: string; connectionId: string }
//     | { ok: false }>;
//
// - It is called only for a credential that starts with `wid_mcp_` (ACCESS_TOKEN_PREFIX), sent as
//   `Authorization: Bearer wid_mcp_…` or bare, and receives the whole token as sent.
// - `{ ok: true }`: `keyHash` is the SHA-256 hex digest metering looks up in `api_keys.key_hash`
//   (meter_call): every tool call of the connection is billed and rate-limited on that key's row,
//   exactly as an API key with that digest would be, and usage is recorded under its key id.
//   `accountId` is the account the hourly limit of non-tool methods counts against (shared with
//   the account's API keys). `connectionId` is carried through to tools (McpCaller) for logs.
// - `{ ok: false }` (unknown, expired, revoked, wrong audience): HTTP 401 with
//   `WWW-Authenticate: Bearer resource_metadata="{site_url}/.well-known/oauth-protected-resource/mcp"`,
//   for every method, initialize and tools/list included (the interface's authentication rules).
// - Throwing means the token service is unavailable: the request answers 503 with Retry-After.
// - createApp passes the OAuth module's own check (src/oauth/grants.ts verifyAccessToken) unless
//   AppDeps.verifyAccessToken replaces it (tests do).
//
// Anything else in the header is an API key as sent: a mistyped one is not refused here but at the
// tool call, as a tool error saying the key is invalid (the interface's authentication rules); no header at all
// may initialize, ping and list tools, and gets the same 401 on tools/call.
import { isApiKeyShape } from "../ledger/keys.ts";
import { credentialOf, keyDigest } from "../http/meter.ts";

export const ACCESS_TOKEN_PREFIX = "wid_mcp_";

export type AccessTokenVerdict =
  | { ok: true; accountId: string; keyHash: string; connectionId: string }
  | { ok: false };

export type VerifyAccessToken = (token: string) => Promise<AccessTokenVerdict>;

/** The caller of one /mcp request. */
export type McpCaller =
  /** No Authorization header. */
  | { kind: "anonymous" }
  /** An API key as sent; `keyHash` is null when the value cannot be a key (it is then invalid at the tool call). */
  | { kind: "api_key"; keyHash: string | null }
  /** A verified OAuth access token. */
  | { kind: "oauth"; accountId: string; keyHash: string; connectionId: string }
  /** A `wid_mcp_` token that did not verify: 401 for every method. */
  | { kind: "rejected" };

/** Decides the caller of a request; throws only when the token verifier itself fails. */
export async function identifyCaller(req: Request, verify?: VerifyAccessToken): Promise<McpCaller> {
  const credential = credentialOf(req);
  if (!credential) return { kind: "anonymous" };
  if (credential.startsWith(ACCESS_TOKEN_PREFIX)) {
    if (!verify) return { kind: "rejected" };
    const verdict = await verify(credential);
    return verdict.ok
      ? { kind: "oauth", accountId: verdict.accountId, keyHash: verdict.keyHash, connectionId: verdict.connectionId }
      : { kind: "rejected" };
  }
  return { kind: "api_key", keyHash: isApiKeyShape(credential) ? await keyDigest(credential) : null };
}

/** The key digest metering uses for this caller, or null when it has no usable credential. */
export function meteringKeyHash(caller: McpCaller): string | null {
  return caller.kind === "api_key" || caller.kind === "oauth" ? caller.keyHash : null;
}

/** RFC 9728 metadata URL of the /mcp resource (path-inserted well-known URL). */
export function resourceMetadataUrl(siteUrl: string): string {
  return `${siteUrl}/.well-known/oauth-protected-resource/mcp`;
}

/** The 401 of a missing credential on tools/call, or of an access token that does not verify. */
export function unauthorizedResponse(siteUrl: string, message: string): Response {
  return Response.json(
    { jsonrpc: "2.0", id: null, error: { code: -32001, message } },
    {
      status: 401,
      headers: { "WWW-Authenticate": `Bearer resource_metadata="${resourceMetadataUrl(siteUrl)}"` },
    },
  );
}
