// What a route tells the OpenAPI document about itself, declared beside its handler with the
// same valibot schemas the handler validates with.
import type * as v from "valibot";

type Schema = v.GenericSchema;
type ObjectSchema = v.ObjectSchema<v.ObjectEntries, v.ErrorMessage<v.ObjectIssue> | undefined>;

export interface ErrorCase {
  status: number;
  codes: string[];
  /** Names from RESPONSE_HEADERS this error carries beyond the standard ones. */
  headers?: string[];
  /** The body when it is more than {error, code}. */
  schema?: Schema;
  /** What this status means here, when the house meaning of the status does not fit. */
  description?: string;
}

export interface Operation {
  method: "get" | "post" | "delete";
  /** A public GET that HEAD serves too (headers only); HEAD is 405 everywhere else. */
  head?: true;
  /** OpenAPI path template under {base_url}, or under {site_url} when `site` is set. */
  path: string;
  site?: boolean;
  operationId: string;
  tag: string;
  summary: string;
  description: string;
  /** Needs an API key in Authorization (adds 401, 429 and the rate-limit headers). */
  auth: boolean;
  /** Accepts an API key but does not always need one (the MCP endpoint: only tools/call does). */
  optionalAuth?: boolean;
  params?: ObjectSchema;
  query?: ObjectSchema;
  headers?: Record<string, Schema>;
  body?: Schema;
  /** A form body (application/x-www-form-urlencoded) instead of JSON: the OAuth endpoints. */
  formBody?: Schema;
  /** Errors are RFC 6749 JSON, {error, error_description}, with the codes as `error`. */
  oauthErrors?: boolean;
  success: {
    status: number;
    description: string;
    /** JSON body; absent with `html`. */
    schema?: Schema;
    html?: boolean;
    /** A text/plain body (the Prometheus exposition). */
    text?: boolean;
    /** No body: a redirect (with Location) or an empty 200. */
    empty?: boolean;
    /** Names from RESPONSE_HEADERS beyond the rate-limit headers. */
    headers?: string[];
  };
  /** Errors this operation answers with; the standard ones (401, 429, 500, 503) are added by `auth`. */
  errors: ErrorCase[];
  /**
   * Paid per call over x402 without a key (x-payment-info): the most matches one call can bill,
   * each at the configured price.
   */
  paidPerCall?: { maxMatches: number };
  /** Body of its error responses when they are not `{error, code}` (the MCP endpoint answers JSON-RPC errors). */
  errorBody?: Schema;
}

export const RESPONSE_HEADERS: Record<string, { description: string; schema: Record<string, unknown> }> = {
  "X-RateLimit-Limit": { description: "Limit of the rate window closest to exhaustion", schema: { type: "integer" } },
  "X-RateLimit-Remaining": { description: "Units left in that window", schema: { type: "integer" } },
  "X-RateLimit-Reset": { description: "Unix epoch seconds at which that window resets", schema: { type: "integer" } },
  "RateLimit-Policy": {
    description: 'Every limited rate window as an IETF policy (draft-ietf-httpapi-ratelimit-headers-11): `"minute";q=60;w=60, "day";q=10000;w=86400, "month";q=300000;w=2592000` (q: units, w: window seconds)',
    schema: { type: "string" },
  },
  RateLimit: {
    description: 'What is left of each policy: `"minute";r=45;t=30, ...` (r: units remaining, t: seconds until the window resets)',
    schema: { type: "string" },
  },
  "Retry-After": { description: "Seconds to wait before retrying", schema: { type: "integer" } },
  "X-Data-Staleness": { description: "`stale` on a record past its freshness window; absent on fresh records", schema: { type: "string", const: "stale" } },
  "X-Last-Updated": { description: "Timestamp of the newest observation of a stale record", schema: { type: "string", format: "date-time" } },
  "Idempotent-Replayed": { description: "`true` when the response replays a stored one", schema: { type: "string", const: "true" } },
  "PAYMENT-REQUIRED": { description: "x402 version 2 payment challenge: base64 of the JSON PaymentRequired (x402Version, resource, accepts)", schema: { type: "string" } },
  "PAYMENT-RESPONSE": { description: "x402 version 2 settlement result: base64 of the JSON SettleResponse (success, transaction, network, payer)", schema: { type: "string" } },
  "X-Request-Id": { description: "Identifies the request in the service's logs", schema: { type: "string" } },
  Location: { description: "Where the browser goes next: the client's callback with `code`, `state` and `iss` (or `error`)", schema: { type: "string", format: "uri" } },
  "Cache-Control": { description: "`no-store`: the response carries secrets", schema: { type: "string", const: "no-store" } },
  "WWW-Authenticate": {
    description:
      "REST: `Bearer realm=\"walletid\"`, with `error=\"invalid_token\"` when the key sent is not a working key. MCP: `Bearer resource_metadata=\"{site_url}/.well-known/oauth-protected-resource/mcp\"`, where an MCP host starts OAuth",
    schema: { type: "string" },
  },
};
