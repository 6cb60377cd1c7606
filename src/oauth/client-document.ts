// Client ID metadata documents: a client_id that is an https URL names a JSON document the
// client publishes. Fetching one on a stranger's say-so is an SSRF risk, so the URL must be
// canonical and name a host (never an IP), and the fetch goes through the outbound module
// (src/http/outbound.ts: public addresses only, checked on the address connected to) with 5
// seconds, no redirects, no compression and 64 KB counted on the bytes read.
import { isIpLiteralHost } from "../http/addresses.ts";
import { OutboundError, type OutboundResponse } from "../http/outbound.ts";
import { redirectUriProblem } from "./redirect-uris.ts";
import { DOCUMENT_MAX_BYTES, DOCUMENT_TIMEOUT_MS, type OAuthDeps } from "./deps.ts";

export interface ClientDocument {
  clientName?: string;
  redirectUris: string[];
  raw: Record<string, unknown>;
}

export type DocumentResult = { ok: true; document: ClientDocument } | { ok: false; reason: string };

/** A client_id that names a metadata document rather than a registered client. */
export function isDocumentClientId(clientId: string): boolean {
  return clientId.includes("://");
}

/** Why a client_id URL breaks the URL rules of a metadata-document client_id (docs/oauth.md), or undefined. */
export function documentUrlProblem(clientId: string): string | undefined {
  let url: URL;
  try {
    url = new URL(clientId);
  } catch {
    return "it is not a URL";
  }
  if (url.protocol !== "https:") return "it must use https";
  if (url.username || url.password) return "it must not carry credentials";
  if (clientId.includes("#")) return "it must not have a fragment";
  if (url.pathname === "/" || url.pathname === "") return "it must have a path";
  if (isIpLiteralHost(url.hostname)) return "its host must be a name, not an IP address";
  if (url.href !== clientId) return `it must be written as a URL parser prints it (${url.href})`;
  return undefined;
}

const fail = (reason: string): DocumentResult => ({ ok: false, reason });

function validateDocument(clientId: string, json: unknown): DocumentResult {
  if (typeof json !== "object" || json === null || Array.isArray(json)) return fail("the document is not a JSON object");
  const doc = json as Record<string, unknown>;
  if (doc.client_id !== clientId) return fail("the document does not name its own URL as client_id");
  if (doc.client_secret !== undefined || doc.client_secret_expires_at !== undefined) {
    return fail("the document carries a client secret");
  }
  if (doc.token_endpoint_auth_method !== undefined && doc.token_endpoint_auth_method !== "none") {
    return fail("only public clients (token_endpoint_auth_method none) are accepted");
  }
  const uris = doc.redirect_uris;
  if (!Array.isArray(uris) || uris.length === 0 || uris.length > 10) return fail("redirect_uris must list 1 to 10 URLs");
  for (const uri of uris) {
    const problem = redirectUriProblem(uri);
    if (problem) return fail(`redirect URI ${JSON.stringify(uri)} ${problem}`);
  }
  if (doc.grant_types !== undefined && !(Array.isArray(doc.grant_types) && doc.grant_types.includes("authorization_code"))) {
    return fail("grant_types must include authorization_code");
  }
  if (doc.client_name !== undefined && (typeof doc.client_name !== "string" || doc.client_name.length > 200)) {
    return fail("client_name must be a string of at most 200 characters");
  }
  return { ok: true, document: { clientName: doc.client_name as string | undefined, redirectUris: uris as string[], raw: doc } };
}

/** Fetches and checks the metadata document of `clientId`; never throws for a bad document. */
export async function fetchClientDocument(deps: OAuthDeps, clientId: string): Promise<DocumentResult> {
  const problem = documentUrlProblem(clientId);
  if (problem) return fail(`Cannot use client_id ${clientId}: ${problem}`);
  if (!deps.outbound) return fail("Cannot fetch client metadata documents: this server makes no outbound requests");
  let res: OutboundResponse;
  try {
    res = await deps.outbound.send({
      url: clientId,
      method: "GET",
      headers: { Accept: "application/json", "Accept-Encoding": "identity" },
      timeoutMs: DOCUMENT_TIMEOUT_MS,
      maxBytes: DOCUMENT_MAX_BYTES,
    });
  } catch (err) {
    if (!(err instanceof OutboundError)) throw err;
    switch (err.reason) {
      case "url":
      case "address":
      case "unpinnable":
        return fail(`Cannot fetch ${clientId}: ${err.message}`);
      case "timeout":
        return fail(`Cannot fetch ${clientId}: no complete answer within ${DOCUMENT_TIMEOUT_MS / 1000} seconds`);
      case "too_large":
        return fail(`Cannot use ${clientId}: the document is larger than ${DOCUMENT_MAX_BYTES / 1024} KB`);
      case "network":
        deps.log(`oauth: fetching the metadata document ${clientId} failed: ${err.message}`, "warn");
        return fail(`Cannot fetch ${clientId}: the request failed`);
    }
  }
  if (res.status >= 300 && res.status < 400) return fail(`Cannot fetch ${clientId}: it answered a redirect, and redirects are not followed`);
  if (res.status !== 200) return fail(`Cannot fetch ${clientId}: it answered HTTP ${res.status}`);
  const encoding = res.headers.get("content-encoding");
  if (encoding && encoding.trim().toLowerCase() !== "identity") {
    return fail(`Cannot fetch ${clientId}: it answered compressed (${encoding}); the document must be uncompressed`);
  }
  let json: unknown;
  try {
    json = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(res.body));
  } catch {
    return fail(`Cannot use ${clientId}: the document is not JSON`);
  }
  const checked = validateDocument(clientId, json);
  return checked.ok ? checked : fail(`Cannot use ${clientId}: ${checked.reason}`);
}
