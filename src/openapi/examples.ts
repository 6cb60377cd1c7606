// The request example of every operation (a curl command line in `x-codeSamples`) and the type of
// the response examples recorded from real responses of the test suite
// (src/openapi/recorded-examples.json, written by `UPDATE_EXAMPLES=1` and checked by
// test/openapi-examples.test.ts, which fails when the server no longer answers so).
import type { Operation } from "./operation.ts";
// a JSON module, not a file read: Node (tsx), Deno and Bun all load it with the module graph,
// and the handlers stay free of node:fs
import recorded from "./recorded-examples.json" with { type: "json" };

export interface RequestExample {
  /** Path parameters by name. */
  params?: Record<string, string>;
  query?: Record<string, string>;
  /** A JSON body, or form fields for the OAuth endpoints. */
  body?: unknown;
  form?: Record<string, string>;
  headers?: Record<string, string>;
}

const A = `0x${"a".repeat(40)}`;
const C = `0x${"c".repeat(40)}`;
const NEVER = `0x${"3".repeat(40)}`;
const ID = "6f1c2a54-3b1e-4e8a-9d2f-0c4b7a1e5d93";
/** The wallet the test suite buys and recovers with (the first development account of Hardhat and Anvil). */
const BUYER = "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266";

/** A real response to an example request, as recorded by the test suite (volatile values normalised). */
export interface RecordedExample {
  status: number;
  /** Headers worth showing: a redirect's Location; the x402 headers decoded from their base64 JSON. */
  headers?: Record<string, unknown>;
  /** The JSON body; for an HTML page or a text exposition, a string excerpt (`excerpt` set). */
  body?: unknown;
  excerpt?: true;
}

/** The recorded response examples by operationId. */
export const RECORDED_EXAMPLES = recorded.examples as Record<string, RecordedExample[]>;

/** The example request of each operation, by operationId; the same requests record the responses. */
export const REQUEST_EXAMPLES: Record<string, RequestExample> = {
  lookupWallet: { params: { address: A } },
  lookupBatch: { body: { wallets: [A, C, NEVER] } },
  estimateList: { body: { wallets: [A, C, NEVER, ...Array.from({ length: 9 }, (_, i) => `0x${String(i + 1).repeat(40)}`)] } },
  reverseTwitter: { params: { handle: "alice" } },
  reverseFarcaster: { params: { username: "alice" } },
  submitJob: { body: { wallets: [A, C, NEVER] } },
  jobStatus: { params: { id: ID }, query: { offset: "0" } },
  indexStats: {},
  accountUsage: { query: { period: "day" } },
  registerWebhook: { body: { url: "https://hooks.example.com/walletid", events: ["job.completed", "wallet.changed"] } },
  listWebhooks: {},
  deleteWebhook: { params: { id: ID } },
  rotateWebhookSecret: { params: { id: ID } },
  webhookDeliveries: { params: { id: ID } },
  redeliverWebhook: { params: { id: ID, delivery_id: ID } },
  watchWallets: { body: { wallets: [A, C] } },
  unwatchWallets: { body: { wallets: [C] } },
  watchlist: {},
  listConnections: {},
  disconnect: { params: { id: ID } },
  protectedResourceMetadataMcp: {},
  protectedResourceMetadata: {},
  authorizationServerMetadata: {},
  registerClient: { body: { client_name: "Example MCP host", redirect_uris: ["http://127.0.0.1:33418/callback"] } },
  authorize: {
    query: {
      response_type: "code",
      client_id: "wid_client_EXAMPLE",
      redirect_uri: "http://127.0.0.1:33418/callback",
      code_challenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
      code_challenge_method: "S256",
      state: "af0ifjsldkj",
      resource: "{site_url}/mcp",
    },
  },
  authorizeDecision: { form: { consent: "<from the consent page>", csrf: "<from the consent page>", api_key: "wid_live_…", decision: "approve" } },
  token: {
    form: {
      grant_type: "authorization_code",
      code: "<code from the redirect>",
      redirect_uri: "http://127.0.0.1:33418/callback",
      client_id: "wid_client_EXAMPLE",
      code_verifier: "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk",
    },
  },
  revokeToken: { form: { token: "wid_mcr_…", client_id: "wid_client_EXAMPLE" } },
  mcp: {
    body: { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "walletid_resolve_wallets", arguments: { wallets: [A] } } },
    headers: { Accept: "application/json, text/event-stream", "Mcp-Protocol-Version": "2025-11-25" },
  },
  buyCredits: { body: { quantity: 1 }, headers: { "PAYMENT-SIGNATURE": "<base64 x402 PaymentPayload, from the 402's PAYMENT-REQUIRED>" } },
  recoveryChallenge: { query: { wallet: BUYER } },
  recoverKey: { body: { wallet: BUYER, issued_at: "<from the challenge>", token: "<from the challenge>", signature: "0x<personal_sign over the challenge's message>" } },
  optOutChallenge: { body: { wallet: BUYER, action: "remove" } },
  optOut: { body: { message: "<the challenge's message, exactly as returned>", signature: "0x<personal_sign over the message>" } },
  optOutPage: {},
  optOutScript: {},
  health: {},
  openapiDocument: {},
  apiReference: {},
  metrics: {},
};

/** The concrete path of an operation's example: its template with the example's parameters. */
export function examplePath(op: Operation, example: RequestExample): string {
  const path = op.path.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(example.params?.[name] ?? `{${name}}`));
  const query = new URLSearchParams(example.query ?? {}).toString();
  return query ? `${path}?${query}` : path;
}

const shellQuote = (text: string) => `'${text.replace(/'/g, `'\\''`)}'`;

/** The curl command line of an operation's example, against the document's own server URLs. */
export function curlExample(op: Operation, urls: { base: string; site: string }): string | undefined {
  const example = REQUEST_EXAMPLES[op.operationId];
  if (!example) return undefined;
  const url = `${op.site ? urls.site : urls.base}${examplePath(op, example)}`.replace("%7Bsite_url%7D", encodeURIComponent(urls.site));
  const lines = [`curl${op.method === "get" ? "" : ` -X ${op.method.toUpperCase()}`} ${shellQuote(url)}`];
  if (op.auth || op.optionalAuth) lines.push(`-H "Authorization: Bearer $WALLETID_API_KEY"`);
  for (const [name, value] of Object.entries(example.headers ?? {})) lines.push(`-H ${shellQuote(`${name}: ${value}`)}`);
  if (example.body !== undefined) {
    lines.push(`-H 'Content-Type: application/json'`, `-d ${shellQuote(JSON.stringify(example.body))}`);
  }
  for (const [name, value] of Object.entries(example.form ?? {})) lines.push(`--data-urlencode ${shellQuote(`${name}=${value}`)}`);
  return lines.join(" \\\n  ");
}
