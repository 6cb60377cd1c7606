// Codes, tokens and connections: the authorization-code exchange (PKCE S256), rotating refresh
// tokens with a 30-second grace for racing rotations, revocation, and verification of access
// tokens for the MCP server. Outcomes are values; only infrastructure failures throw.
import type { Db } from "../db/types.ts";
import { sql } from "../db/queries.ts";
import {
  ACCESS_TTL_MS,
  CODE_TTL_MS,
  ROTATION_GRACE_MS,
  TOKEN_REQUESTS_PER_MINUTE,
  type OAuthDeps,
} from "./deps.ts";
import {
  ACCESS_PREFIX,
  REFRESH_PREFIX,
  constantTimeEqual,
  isAccessTokenShape,
  isCodeVerifierShape,
  isRefreshTokenShape,
  pkceChallenge,
  randomToken,
  tokenHash,
} from "./secrets.ts";

export interface TokenSet {
  access_token: string;
  token_type: "Bearer";
  expires_in: number;
  refresh_token: string;
  scope: string;
}

export type GrantError =
  | { ok: false; status: 400; error: "invalid_grant" | "invalid_request" | "invalid_target"; description: string }
  | { ok: false; status: 429; error: "slow_down"; description: string; retryAfter: number }
  | { ok: false; status: 503; error: "temporarily_unavailable"; description: string; tokenRotated: true };

export type GrantResult = { ok: true; tokens: TokenSet } | GrantError;

const invalidGrant = (description: string): GrantError => ({ ok: false, status: 400, error: "invalid_grant", description });

/** Issues a one-minute code for an approved consent; returns the code (only its hash is kept). */
export async function issueCode(
  deps: OAuthDeps,
  params: { clientId: string; accountId: string; redirectUri: string; codeChallenge: string; scope: string; resource: string },
): Promise<string> {
  const code = randomToken();
  const now = deps.now();
  await deps.db.query(sql("oauth_codes_insert"), [
    await tokenHash(code),
    params.clientId,
    params.accountId,
    params.redirectUri,
    params.codeChallenge,
    params.scope,
    params.resource,
    now,
    new Date(now.getTime() + CODE_TTL_MS),
  ]);
  return code;
}

async function mintTokens(tx: Db, connectionId: string, scope: string, now: Date): Promise<TokenSet> {
  const access = randomToken(ACCESS_PREFIX);
  const refresh = randomToken(REFRESH_PREFIX);
  await tx.query(sql("oauth_tokens_insert_pair"), [
    await tokenHash(access),
    await tokenHash(refresh),
    connectionId,
    new Date(now.getTime() + ACCESS_TTL_MS),
    now,
  ]);
  return { access_token: access, token_type: "Bearer", expires_in: ACCESS_TTL_MS / 1000, refresh_token: refresh, scope };
}

async function endConnection(db: Db, connectionId: string, now: Date, accountId: string | null = null): Promise<boolean> {
  const rows = await db.query(sql("oauth_connections_revoke"), [connectionId, now, accountId]);
  return rows.length > 0;
}

type CodeRow = {
  client_id: string;
  account_id: string;
  redirect_uri: string;
  code_challenge: string;
  scope: string;
  resource: string;
  expires_at: Date;
  used_at: Date | null;
  connection_id: string | null;
};

/**
 * grant_type=authorization_code. The code, its client, redirect and verifier are checked under
 * the code's row lock; the exchange (connection, hidden key, tokens, code marked used) commits
 * as one transaction, so a retry after a failure that committed nothing is safe, and a second
 * exchange of a used code ends what the first one issued.
 */
export async function exchangeCode(
  deps: OAuthDeps,
  params: { code: string; clientId?: string; redirectUri?: string; codeVerifier?: string },
): Promise<GrantResult> {
  if (!params.codeVerifier || !isCodeVerifierShape(params.codeVerifier)) {
    return { ok: false, status: 400, error: "invalid_request", description: "code_verifier (43 to 128 characters) is required: PKCE S256" };
  }
  if (!params.redirectUri) return { ok: false, status: 400, error: "invalid_request", description: "redirect_uri is required" };
  const hash = await tokenHash(params.code);
  const challenge = await pkceChallenge(params.codeVerifier);
  const now = deps.now();
  return await deps.db.transaction(async (tx): Promise<GrantResult> => {
    const [code] = await tx.query<CodeRow>(sql("oauth_codes_select_for_update"), [hash]);
    if (!code) return invalidGrant("The authorization code is not valid");
    if (params.clientId !== undefined && params.clientId !== code.client_id) {
      return invalidGrant("The authorization code was issued to another client");
    }
    if (code.used_at) {
      if (code.connection_id) await endConnection(tx, code.connection_id, now);
      return invalidGrant("The authorization code was already used; what it issued has been revoked");
    }
    if (new Date(code.expires_at).getTime() <= now.getTime()) return invalidGrant("The authorization code has expired (codes are valid one minute)");
    if (params.redirectUri !== code.redirect_uri) return invalidGrant("redirect_uri differs from the one of the authorization request");
    if (!constantTimeEqual(challenge, code.code_challenge)) return invalidGrant("code_verifier does not match the code_challenge");

    const connectionId = crypto.randomUUID();
    const keyId = crypto.randomUUID();
    const [client] = await tx.query<{ client_name: string | null }>(sql("oauth_clients_select"), [code.client_id]);
    // the hidden key's secret is generated and dropped: only its hash exists anywhere
    await tx.query(sql("oauth_internal_key_insert"), [keyId, code.account_id, await tokenHash(randomToken()), client?.client_name ?? code.client_id, now]);
    await tx.query(sql("oauth_connections_insert"), [
      connectionId,
      code.account_id,
      code.client_id,
      client?.client_name ?? null,
      keyId,
      code.scope,
      code.resource,
      now,
    ]);
    await tx.query(sql("oauth_codes_mark_used"), [hash, now, connectionId]);
    return { ok: true, tokens: await mintTokens(tx, connectionId, code.scope, now) };
  });
}

type RefreshRow = {
  rotated_at: Date | null;
  connection_id: string;
  client_id: string;
  scope: string;
  revoked_at: Date | null;
};

/**
 * grant_type=refresh_token. Exactly one of several racing rotations of a token wins and gets
 * new tokens; a token already rotated out answers 503 token_rotated while its rotation is at
 * most 30 seconds old (the racing requests of one client), and ends the connection after that
 * (a replaced token coming back later is a stolen copy, or its owner is confused).
 */
export async function refreshTokens(deps: OAuthDeps, params: { refreshToken: string; clientId?: string }): Promise<GrantResult> {
  if (!isRefreshTokenShape(params.refreshToken)) return invalidGrant("The refresh token is not valid");
  const hash = await tokenHash(params.refreshToken);
  const now = deps.now();
  return await deps.db.transaction(async (tx): Promise<GrantResult> => {
    const [row] = await tx.query<RefreshRow>(sql("oauth_tokens_select_refresh"), [hash]);
    if (!row || row.revoked_at) return invalidGrant("The refresh token is not valid, or its connection has ended");
    if (params.clientId !== undefined && params.clientId !== row.client_id) {
      return invalidGrant("The refresh token was issued to another client");
    }
    const [count] = await tx.query<{ used: number; window_start: Date }>(sql("oauth_request_counts_hit"), [
      `token:${row.connection_id}`,
      now,
      60,
    ]);
    if (count.used > TOKEN_REQUESTS_PER_MINUTE) {
      const retryAfter = Math.max(1, Math.ceil((new Date(count.window_start).getTime() + 60_000 - now.getTime()) / 1000));
      return { ok: false, status: 429, error: "slow_down", description: `Too many token requests for this connection: at most ${TOKEN_REQUESTS_PER_MINUTE} a minute`, retryAfter };
    }
    const claimed = await tx.query(sql("oauth_tokens_rotate"), [hash, now]);
    if (claimed.length === 0) {
      // rotated out: re-read when, since a racing request may have just committed it
      const [again] = await tx.query<RefreshRow>(sql("oauth_tokens_select_refresh"), [hash]);
      const rotatedAt = again?.rotated_at ? new Date(again.rotated_at).getTime() : 0;
      if (again && !again.revoked_at && now.getTime() - rotatedAt <= ROTATION_GRACE_MS) {
        return {
          ok: false,
          status: 503,
          error: "temporarily_unavailable",
          description: "This refresh token was just rotated by another request: use the tokens that request received, and do not resend this one",
          tokenRotated: true,
        };
      }
      await endConnection(tx, row.connection_id, now);
      return invalidGrant("This refresh token was already replaced; the connection has been ended for safety");
    }
    await tx.query(sql("oauth_connections_touch"), [row.connection_id, now]);
    return { ok: true, tokens: await mintTokens(tx, row.connection_id, row.scope, now) };
  });
}

/** RFC 7009: ends the connection of any token of it (access or refresh), when it belongs to `clientId`. */
export async function revokeToken(deps: OAuthDeps, params: { token: string; clientId?: string }): Promise<void> {
  if (!isAccessTokenShape(params.token) && !isRefreshTokenShape(params.token)) return;
  const [row] = await deps.db.query<{ connection_id: string; client_id: string }>(sql("oauth_tokens_select_connection"), [
    await tokenHash(params.token),
  ]);
  if (!row) return;
  if (params.clientId !== undefined && params.clientId !== row.client_id) return;
  await endConnection(deps.db, row.connection_id, deps.now());
}

export type AccessTokenCheck = { ok: true; accountId: string; keyHash: string; connectionId: string } | { ok: false };

/** The MCP server's check of a bearer token: an unexpired `wid_mcp_` token of a live connection for this resource. */
export async function verifyAccessToken(deps: Pick<OAuthDeps, "db" | "now" | "resource">, token: string): Promise<AccessTokenCheck> {
  if (!isAccessTokenShape(token)) return { ok: false };
  const [row] = await deps.db.query<{ connection_id: string; account_id: string; key_hash: string }>(sql("oauth_tokens_verify_access"), [
    await tokenHash(token),
    deps.now(),
    deps.resource,
  ]);
  return row ? { ok: true, accountId: row.account_id, keyHash: row.key_hash, connectionId: row.connection_id } : { ok: false };
}

export interface Connection {
  id: string;
  client_id: string;
  client_name: string | null;
  created_at: string;
  last_used_at: string | null;
}

export async function listConnections(db: Db, accountId: string): Promise<Connection[]> {
  const rows = await db.query<{ id: string; client_id: string; client_name: string | null; created_at: Date; last_used_at: Date | null }>(
    sql("oauth_connections_select_by_account"),
    [accountId],
  );
  return rows.map((r) => ({
    id: r.id,
    client_id: r.client_id,
    client_name: r.client_name,
    created_at: new Date(r.created_at).toISOString(),
    last_used_at: r.last_used_at ? new Date(r.last_used_at).toISOString() : null,
  }));
}

/** Ends a connection (of `accountId` when given); false when there was no such live connection. */
export async function disconnect(db: Db, params: { connectionId: string; accountId?: string; now: Date }): Promise<boolean> {
  return await endConnection(db, params.connectionId, params.now, params.accountId ?? null);
}
