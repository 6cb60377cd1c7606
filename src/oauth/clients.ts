// OAuth clients: dynamic registration (RFC 7591), redirect URI rules, and lookup of a client by
// id, registered or by metadata document.
import { sql } from "../db/queries.ts";
import { fetchClientDocument, isDocumentClientId } from "./client-document.ts";
import { DOCUMENT_CACHE_MS, SCOPE, type OAuthDeps } from "./deps.ts";
import { isLoopbackRedirect, redirectUriProblem } from "./redirect-uris.ts";
import { base64Url } from "./secrets.ts";

export interface OAuthClient {
  clientId: string;
  source: "registered" | "document";
  clientName?: string;
  redirectUris: string[];
}

export type ClientLookup = { ok: true; client: OAuthClient } | { ok: false; reason: string };

/**
 * The redirect URI of a request when it matches one the client declared: exactly, or, for a
 * loopback redirect over http, with any port.
 */
export function matchRedirectUri(client: OAuthClient, requested: string): boolean {
  if (client.redirectUris.includes(requested)) return true;
  let url: URL;
  try {
    url = new URL(requested);
  } catch {
    return false;
  }
  if (!isLoopbackRedirect(url) || requested.includes("#")) return false;
  const portless = (u: URL) => `${u.protocol}//${u.hostname}${u.pathname}${u.search}`;
  return client.redirectUris.some((declared) => {
    try {
      const d = new URL(declared);
      return isLoopbackRedirect(d) && portless(d) === portless(url);
    } catch {
      return false;
    }
  });
}

export type Registration =
  | { ok: true; client: OAuthClient; body: Record<string, unknown> }
  | { ok: false; error: "invalid_redirect_uri" | "invalid_client_metadata"; description: string };

const GRANTS = ["authorization_code", "refresh_token"];

/** Validates RFC 7591 client metadata and registers a public client. */
export async function registerClient(deps: OAuthDeps, metadata: unknown): Promise<Registration> {
  if (typeof metadata !== "object" || metadata === null || Array.isArray(metadata)) {
    return { ok: false, error: "invalid_client_metadata", description: "The body must be a JSON object of client metadata" };
  }
  const m = metadata as Record<string, unknown>;
  const uris = m.redirect_uris;
  if (!Array.isArray(uris) || uris.length === 0 || uris.length > 10) {
    return { ok: false, error: "invalid_redirect_uri", description: "redirect_uris must be an array of 1 to 10 URLs" };
  }
  for (const uri of uris) {
    const problem = redirectUriProblem(uri);
    if (problem) return { ok: false, error: "invalid_redirect_uri", description: `Redirect URI ${JSON.stringify(uri)} ${problem}` };
  }
  const requestedGrants = m.grant_types === undefined ? GRANTS : m.grant_types;
  if (!Array.isArray(requestedGrants) || !requestedGrants.every((g) => typeof g === "string")) {
    return { ok: false, error: "invalid_client_metadata", description: "grant_types must be an array of strings" };
  }
  if (!requestedGrants.includes("authorization_code")) {
    return {
      ok: false,
      error: "invalid_client_metadata",
      description: "grant_types must include authorization_code: it is the only way to obtain tokens here",
    };
  }
  if (m.response_types !== undefined && (!Array.isArray(m.response_types) || !m.response_types.includes("code"))) {
    return { ok: false, error: "invalid_client_metadata", description: "response_types must include code" };
  }
  if (m.client_name !== undefined && (typeof m.client_name !== "string" || m.client_name.length > 200)) {
    return { ok: false, error: "invalid_client_metadata", description: "client_name must be a string of at most 200 characters" };
  }
  for (const field of ["application_type", "client_uri", "logo_uri", "software_id", "software_version"]) {
    if (m[field] !== undefined && (typeof m[field] !== "string" || (m[field] as string).length > 2000)) {
      return { ok: false, error: "invalid_client_metadata", description: `${field} must be a string` };
    }
  }

  // never URL-shaped, so a generated id cannot be taken for a metadata document's URL
  const clientId = `wid_client_${base64Url(crypto.getRandomValues(new Uint8Array(18)))}`;
  const now = deps.now();
  const grants = GRANTS.filter((g) => requestedGrants.includes(g));
  const body: Record<string, unknown> = {
    client_id: clientId,
    client_id_issued_at: Math.floor(now.getTime() / 1000),
    ...(m.client_name !== undefined ? { client_name: m.client_name } : {}),
    redirect_uris: uris,
    grant_types: grants,
    response_types: ["code"],
    // public clients only: no secret is issued, whatever was asked
    token_endpoint_auth_method: "none",
    scope: SCOPE,
    ...Object.fromEntries(
      ["application_type", "client_uri", "logo_uri", "software_id", "software_version"]
        .filter((f) => m[f] !== undefined)
        .map((f) => [f, m[f]]),
    ),
  };
  await deps.db.query(sql("oauth_clients_insert"), [clientId, (m.client_name as string | undefined) ?? null, uris, JSON.stringify(body), now]);
  return {
    ok: true,
    client: { clientId, source: "registered", clientName: m.client_name as string | undefined, redirectUris: uris as string[] },
    body,
  };
}

type ClientRow = {
  client_id: string;
  source: "registered" | "document";
  client_name: string | null;
  redirect_uris: string[];
  fetched_at: Date | null;
};

function fromRow(row: ClientRow): OAuthClient {
  return {
    clientId: row.client_id,
    source: row.source,
    clientName: row.client_name ?? undefined,
    redirectUris: row.redirect_uris,
  };
}

/** A client by id: registered, or a metadata document (cached for a day, fetched otherwise). */
export async function findClient(deps: OAuthDeps, clientId: string): Promise<ClientLookup> {
  const [row] = await deps.db.query<ClientRow>(sql("oauth_clients_select"), [clientId]);
  if (!isDocumentClientId(clientId)) {
    return row && row.source === "registered" ? { ok: true, client: fromRow(row) } : { ok: false, reason: "This client is not registered here" };
  }
  const now = deps.now();
  if (row && row.source === "document" && row.fetched_at && now.getTime() - new Date(row.fetched_at).getTime() < DOCUMENT_CACHE_MS) {
    return { ok: true, client: fromRow(row) };
  }
  const fetched = await fetchClientDocument(deps, clientId);
  if (!fetched.ok) return fetched;
  await deps.db.query(sql("oauth_clients_upsert_document"), [
    clientId,
    fetched.document.clientName ?? null,
    fetched.document.redirectUris,
    JSON.stringify(fetched.document.raw),
    now,
  ]);
  return {
    ok: true,
    client: { clientId, source: "document", clientName: fetched.document.clientName, redirectUris: fetched.document.redirectUris },
  };
}
