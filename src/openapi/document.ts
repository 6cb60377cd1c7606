// Assembles the OpenAPI 3.1.0 document from the operations the routes declare, converting their
// valibot schemas to JSON Schema (draft 2020-12, the dialect of OpenAPI 3.1).
import * as v from "valibot";
import { toJsonSchema } from "@valibot/to-json-schema";
import {
  BatchResponse,
  BatchRow,
  EstimateResponse,
  errorSchema,
  HealthResponse,
  JobPollResponse,
  JobResultRow,
  JobSubmitResponse,
  oauthErrorSchema,
  ReverseFarcasterResponse,
  ReverseRow,
  ReverseTwitterResponse,
  StatsResponse,
  UsageResponse,
  WalletLookupResponse,
  WalletRecord,
} from "../http/schemas.ts";
import { RESPONSE_HEADERS, type ErrorCase, type Operation } from "./operation.ts";
import { curlExample, RECORDED_EXAMPLES } from "./examples.ts";

type Json = Record<string, unknown>;

const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: "Bad request",
  401: "Missing or invalid API key",
  402: "No match credits left",
  403: "Forbidden",
  404: "Not found",
  405: "Method not allowed",
  409: "Conflict",
  413: "Request body too large (1 MiB; 4.5 MiB for jobs)",
  415: "Unsupported media type",
  429: "A rate window is exhausted; Retry-After says when it resets",
  500: "Internal error; the body never carries a stack, SQL or upstream detail",
  503: "Database or upstream temporarily unavailable; Retry-After says when to retry",
};

const RATE_LIMIT_HEADERS = ["X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "RateLimit-Policy", "RateLimit"];

export function jsonSchema(schema: v.GenericSchema): Json {
  const { $schema: _, ...rest } = toJsonSchema(schema, { target: "draft-2020-12", errorMode: "throw" }) as Json;
  return rest;
}

/**
 * The response bodies and records clients meet again and again, as named component schemas
 * (generated clients get named types): wherever one of these valibot schemas appears, the
 * document has a $ref to #/components/schemas/<name>.
 */
export const NAMED_SCHEMAS: Record<string, v.GenericSchema> = {
  WalletRecord,
  BatchRecord: BatchRow,
  ReverseRecord: ReverseRow,
  JobResultRecord: JobResultRow,
  WalletResponse: WalletLookupResponse,
  BatchResponse,
  ReverseTwitterResponse,
  ReverseFarcasterResponse,
  Estimate: EstimateResponse,
  JobSubmitted: JobSubmitResponse,
  Job: JobPollResponse,
  Stats: StatsResponse,
  Usage: UsageResponse,
  Health: HealthResponse,
};

/** The generic error body, named; each operation's error responses narrow `code` to its own codes. */
const ERROR_COMPONENT = jsonSchema(
  v.strictObject({
    error: v.pipe(v.string(), v.description("Human-readable message: the thing, then the reason")),
    code: v.pipe(v.string(), v.description("Machine-readable code, stable across releases")),
  }),
);

const toComponents = (node: Json): Json => JSON.parse(JSON.stringify(node).replaceAll('"#/$defs/', '"#/components/schemas/'));

/** A success body's JSON Schema with the named schemas as $refs; their definitions go to `into`. */
function namedJsonSchema(schema: v.GenericSchema, into: Json): Json {
  const { $schema: _, $defs, ...rest } = toJsonSchema(schema, { target: "draft-2020-12", errorMode: "throw", definitions: NAMED_SCHEMAS }) as Json;
  for (const [name, definition] of Object.entries(($defs ?? {}) as Json)) into[name] = toComponents(definition as Json);
  return toComponents(rest);
}

/** Named schemas met while building one document. */
let components: Json = {};

function headerRefs(names: string[]): Json {
  return Object.fromEntries(names.map((name) => [name, { $ref: `#/components/headers/${name}` }]));
}

/** The errors an operation can answer with: its own plus the standard ones of an authenticated call. */
export function errorCases(op: Operation): ErrorCase[] {
  const byStatus = new Map<number, Set<string>>();
  const own = new Map(op.errors.map((e) => [e.status, e]));
  const add = (status: number, codes: string[]) => {
    const set = byStatus.get(status) ?? new Set<string>();
    for (const code of codes) set.add(code);
    byStatus.set(status, set);
  };
  for (const e of op.errors) add(e.status, e.codes);
  if (op.auth) {
    add(401, ["UNAUTHORIZED"]);
    add(429, ["RATE_LIMITED"]);
    add(503, ["SERVICE_UNAVAILABLE"]);
  }
  add(500, ["INTERNAL_ERROR"]);
  return [...byStatus]
    .sort(([a], [b]) => a - b)
    .map(([status, codes]) => ({ ...own.get(status), status, codes: [...codes] }));
}

function parameters(op: Operation): Json[] {
  const list: Json[] = [];
  const place = (where: "path" | "query" | "header", name: string, schema: v.GenericSchema, required: boolean) => {
    const { description, ...rest } = jsonSchema(schema);
    list.push({ name, in: where, required, ...(description ? { description } : {}), schema: rest });
  };
  for (const [name, schema] of Object.entries(op.params?.entries ?? {})) place("path", name, schema, true);
  for (const [name, schema] of Object.entries(op.query?.entries ?? {})) place("query", name, schema, schema.type !== "optional");
  for (const [name, schema] of Object.entries(op.headers ?? {})) place("header", name, schema, false);
  return list;
}

function responses(op: Operation): Json {
  const success: Json = {
    description: op.success.description,
    headers: headerRefs([...(op.auth ? RATE_LIMIT_HEADERS : []), ...(op.success.headers ?? []), "X-Request-Id"]),
    ...(op.success.empty
      ? {}
      : {
          content: op.success.html
            ? { "text/html": { schema: { type: "string" } } }
            : op.success.text
            ? { "text/plain": { schema: { type: "string" } } }
            : { "application/json": { schema: op.success.schema ? namedJsonSchema(op.success.schema, components) : {} } },
        }),
  };
  const out: Json = { [String(op.success.status)]: success };
  for (const { status, codes, headers: extra, schema, description } of errorCases(op)) {
    const headers = [
      ...(op.auth && (status === 400 || status === 402 || status === 429) ? RATE_LIMIT_HEADERS : []),
      ...(status === 429 || status === 503 ? ["Retry-After"] : []),
      ...(status === 401 && (op.auth || op.optionalAuth) ? ["WWW-Authenticate"] : []),
      ...(extra ?? []),
      "X-Request-Id",
    ];
    out[String(status)] = {
      description: `${description ?? ERROR_DESCRIPTIONS[status] ?? "Error"}: ${codes.join(", ")}`,
      headers: headerRefs(headers),
      // the OAuth endpoints' own errors are RFC 6749 JSON (or a page); a 500 is the house shape
      content: op.oauthErrors && status !== 500 && op.success.html
        ? { "text/html": { schema: { type: "string", description: `An error page (${codes.join(", ")})` } } }
        : { "application/json": { schema: jsonSchema(schema ?? op.errorBody ?? (op.oauthErrors && status !== 500 ? oauthErrorSchema(codes) : errorSchema(codes))) } },
    };
  }
  attachRecorded(op, out);
  return out;
}

/** base64 of the UTF-8 bytes of `text`, as the x402 headers carry their JSON. */
function base64(text: string): string {
  return btoa(Array.from(new TextEncoder().encode(text), (byte) => String.fromCharCode(byte)).join(""));
}

/**
 * The response examples: real responses recorded by the test suite, each under the status it had,
 * its body in the response's content and the headers it shows (a redirect's Location, the x402
 * headers) as examples of those headers, inline instead of a $ref.
 */
function attachRecorded(op: Operation, out: Json): void {
  for (const example of RECORDED_EXAMPLES[op.operationId] ?? []) {
    const response = out[String(example.status)] as Json | undefined;
    if (!response) continue;
    const summary = `${example.excerpt ? "An excerpt of a real response" : "A real response"}, recorded by the test suite`;
    const [content] = Object.values((response.content ?? {}) as Record<string, Json>);
    if (content && example.body !== undefined) content.examples = { recorded: { summary, value: example.body } };
    const headers = response.headers as Record<string, Json> | undefined;
    for (const [name, value] of Object.entries(example.headers ?? {})) {
      if (!headers?.[name]) continue;
      const shown = typeof value === "string"
        ? { summary, value }
        : { summary, description: `base64 of \`${JSON.stringify(value)}\``, value: base64(JSON.stringify(value)) };
      headers[name] = { description: RESPONSE_HEADERS[name].description, schema: RESPONSE_HEADERS[name].schema, examples: { recorded: shown } };
    }
  }
}

/** Atomic USDC units a match costs when paid per call (X402_MATCH_PRICE), for x-payment-info. */
let matchPrice = 83_334n;

function usd(atomic: bigint): string {
  return `${atomic / 1_000_000n}.${(atomic % 1_000_000n).toString().padStart(6, "0")}`;
}

/**
 * What an operation paid per call costs, in the x-payment-info shape agents' catalogues read
 * ({price: {mode, currency, ...}, protocols: [{x402: ...}]}): a dynamic price from nothing (a miss)
 * to its ceiling, with the price a match and the x402 offer (scheme upto on Base USDC).
 */
function paymentInfo(paid: { maxMatches: number }): Json {
  return {
    price: { mode: "dynamic", currency: "USD", min: usd(0n), max: usd(matchPrice * BigInt(paid.maxMatches)), per_match: usd(matchPrice) },
    protocols: [
      {
        x402: {
          x402Version: 2,
          scheme: "upto",
          network: "eip155:8453",
          asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
          amount_per_match: matchPrice.toString(),
          max_matches: paid.maxMatches,
        },
      },
    ],
  };
}

/** The server URLs the curl examples use: {base_url} and {site_url} of this document. */
let exampleUrls = { base: "", site: "" };

function operationObject(op: Operation): Json {
  const curl = curlExample(op, exampleUrls);
  return {
    operationId: op.operationId,
    tags: [op.tag],
    summary: op.summary,
    description: op.description,
    security: op.auth ? [{ bearerApiKey: [] }, { plainApiKey: [] }] : op.optionalAuth ? [{ bearerApiKey: [] }, { plainApiKey: [] }, {}] : [],
    ...(parameters(op).length > 0 ? { parameters: parameters(op) } : {}),
    ...(op.body
      ? { requestBody: { required: true, content: { "application/json": { schema: jsonSchema(op.body) } } } }
      : {}),
    ...(op.formBody
      ? { requestBody: { required: true, content: { "application/x-www-form-urlencoded": { schema: jsonSchema(op.formBody) } } } }
      : {}),
    responses: responses(op),
    ...(op.paidPerCall ? { "x-payment-info": paymentInfo(op.paidPerCall) } : {}),
    ...(curl ? { "x-codeSamples": [{ lang: "Shell", label: "curl", source: curl }] } : {}),
  };
}

/** HEAD of a public document: the GET's status and headers, no body. */
function headObject(op: Operation): Json {
  const get = operationObject(op);
  const success = (get.responses as Record<string, Json>)[String(op.success.status)];
  return {
    operationId: `${op.operationId}Head`,
    tags: [op.tag],
    summary: `${op.summary} (headers only)`,
    description: "The GET's status and headers without a body; free, never metered.",
    security: [],
    ...(get.parameters ? { parameters: get.parameters } : {}),
    responses: { [String(op.success.status)]: { description: success.description, ...(success.headers ? { headers: success.headers } : {}) } },
  };
}

/** The OpenAPI 3.1.0 document of the given operations, served under `publicUrl`. */
export function buildOpenApiDocument(operations: Operation[], options: { publicUrl: string; matchPrice?: bigint }): Json {
  components = {};
  matchPrice = options.matchPrice ?? 83_334n;
  exampleUrls = { base: `${options.publicUrl}/api/v1`, site: options.publicUrl };
  const paths: Record<string, Json> = {};
  for (const op of operations) {
    const item = (paths[op.path] ??= op.site ? { servers: [{ url: options.publicUrl, description: "{site_url}" }] } : {});
    item[op.method] = operationObject(op);
    if (op.head) item.head = headObject(op);
  }
  return {
    openapi: "3.1.0",
    info: {
      title: "walletid",
      version: "1.0.0",
      summary: "Wallet identity resolution: wallet addresses to social identities, and back",
      description:
        "Resolves blockchain wallet addresses (0x + 40 hex characters) to the social identities attached to them, says what evidence backs each record, and bills one match credit per wallet that resolves to twitter or farcaster. Success bodies are `{data, meta}`; errors are `{error, code}`. CORS is open and OPTIONS answers 204 on every path. Request bodies are limited in binary units, counted on the bytes read: 1 MiB (1,048,576 bytes) for batch and estimate, 4.5 MiB (4,718,592 bytes) for jobs. A request the HTTP parser refuses before it reaches the API (bad framing; headers and URL together over 16 KiB) is 400 `INVALID_REQUEST` or 431 `HEADERS_TOO_LARGE`. HEAD is served on the public documents (health, this document, `/docs` and the OAuth metadata) like GET without a body; on every other path it is 405 `METHOD_NOT_ALLOWED` with `Allow`, free, and never meters or bills. A database that is unavailable or does not answer within a few seconds gives 503 `SERVICE_UNAVAILABLE` with `Retry-After` on every endpoint.",
    },
    servers: [{ url: `${options.publicUrl}/api/v1`, description: "{base_url}" }],
    tags: [...new Set(operations.map((op) => op.tag))].map((name) => ({ name })),
    paths,
    components: {
      schemas: { ...Object.fromEntries(Object.entries(components).sort(([a], [b]) => a.localeCompare(b))), Error: ERROR_COMPONENT },
      securitySchemes: {
        bearerApiKey: {
          type: "http",
          scheme: "bearer",
          bearerFormat: "wid_live_ followed by 32 letters and digits",
          description: "An API key: `Authorization: Bearer wid_live_...`",
        },
        plainApiKey: {
          type: "apiKey",
          in: "header",
          name: "Authorization",
          description: "The same API key without the Bearer prefix: `Authorization: wid_live_...`",
        },
      },
      headers: Object.fromEntries(
        Object.entries(RESPONSE_HEADERS).map(([name, h]) => [name, { description: h.description, schema: h.schema }]),
      ),
    },
  };
}
