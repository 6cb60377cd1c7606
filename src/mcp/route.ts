// POST {site_url}/mcp: the MCP tool server over Streamable HTTP, stateless, JSON responses, a fresh
// McpServer per request. Before any MCP work: DNS-rebinding checks, the credential step, the 401
// of a tools/call without credential, and the hourly limit of every other method.
import { Hono, type Context } from "hono";
import * as v from "valibot";
import {
  createMcpHandler,
  hostHeaderValidationResponse,
  isJsonContentType,
  isLegacyRequest,
  localhostAllowedHostnames,
  originValidationResponse,
  WebStandardStreamableHTTPServerTransport,
  type AuthInfo,
} from "@modelcontextprotocol/server";
import { ApiError } from "../http/errors.ts";
import { ONE_MB, readAtMost, tooLarge } from "../http/body.ts";
import { clientAddress } from "../http/client-address.ts";
import type { Operation } from "../openapi/operation.ts";
import type { OperationDeps } from "../operations/deps.ts";
import { identifyCaller, unauthorizedResponse, type McpCaller, type VerifyAccessToken } from "./credentials.ts";
import { serveSingleRequest, singleRequest } from "./exchange.ts";
import { createHourlyLimiter } from "./hourly.ts";
import { buildMcpServer } from "./tools.ts";

export interface McpRouteDeps {
  operations: OperationDeps;
  verifyAccessToken?: VerifyAccessToken;
  /** The connection's peer address, from the runtime (src/main.ts); absent, "unknown". */
  peerAddress?: (req: Request, env: unknown) => string | undefined;
}

const JsonRpcMessage = v.looseObject({
  jsonrpc: v.literal("2.0"),
  id: v.optional(v.union([v.string(), v.number()])),
  method: v.pipe(
    v.string(),
    v.description("initialize, notifications/initialized, ping, tools/list, tools/call (2025 revisions); server/discover, tools/list, tools/call with the per-request _meta envelope (2026-07-28)"),
  ),
  params: v.optional(v.looseObject({})),
});

const JsonRpcError = v.object({
  jsonrpc: v.literal("2.0"),
  id: v.nullable(v.union([v.string(), v.number()])),
  error: v.object({ code: v.pipe(v.number(), v.description("JSON-RPC error code")), message: v.string() }),
});

export const mcpOpenapi: Operation[] = [
  {
    method: "post",
    path: "/mcp",
    site: true,
    operationId: "mcp",
    tag: "MCP",
    summary: "MCP tool server (Streamable HTTP)",
    description: [
      "The Model Context Protocol endpoint for MCP hosts: JSON-RPC 2.0 over POST, stateless, answered as `application/json` (send `Accept: application/json, text/event-stream`). Hosts on the 2026-07-28 revision and on the 2025 revisions (2025-11-25 back to 2024-11-05) connect alike; GET and DELETE answer 405.",
      "Ten tools: `walletid_resolve_wallets` (1 address up to the batch size; the `/wallet` or `/batch` path), `walletid_estimate_list`, `walletid_submit_job`, `walletid_job_status` (first 100 result rows from `offset`), `walletid_reverse_twitter`, `walletid_reverse_farcaster`, `walletid_account_balance`, `walletid_index_stats`, `walletid_watch_wallets` and `walletid_unwatch_wallets` (`{wallets}`, 1 to 1,000). Each result is a JSON text block and the same object as `structuredContent`, with `billed_matches` and `quota` (the balance before the call's debit and the three rate windows).",
      "Credentials: `initialize`, `ping` and `tools/list` work without one; `tools/call` needs an API key (either Authorization form) or an OAuth access token (`wid_mcp_…`), else 401 with `WWW-Authenticate`. A mistyped key, no credits (naming the purchase endpoint and the pack price) and a rate limit (naming the seconds to wait) are tool errors (`isError: true`, HTTP 200).",
      "Billing and limits: every tool call is billed and rate-limited exactly as the REST endpoint it uses, and recorded in `/usage` under that endpoint. Every other method is limited to 600 requests an hour per account with a working credential (all its keys and connections together) and 120 an hour per IP address without one; a refusal is 429 with `Retry-After` and names the limit. Requests whose `Host` or `Origin` names another site are refused (403, DNS-rebinding protection).",
    ].join("\n\n"),
    auth: false,
    optionalAuth: true,
    headers: { "Mcp-Protocol-Version": v.pipe(v.string(), v.description("The negotiated protocol revision, sent by the host after initialize")) },
    body: v.union([JsonRpcMessage, v.array(JsonRpcMessage)]),
    success: {
      status: 200,
      description: "The JSON-RPC response; notifications alone are answered 202 with no body",
      schema: v.looseObject({ jsonrpc: v.literal("2.0"), id: v.union([v.string(), v.number()]), result: v.optional(v.looseObject({})), error: v.optional(v.looseObject({})) }),
    },
    errors: [
      { status: 400, codes: ["-32700 (parse error)", "-32600 (invalid request)"] },
      { status: 401, codes: ["-32001 (tools/call without a credential, or an invalid OAuth token)"] },
      { status: 403, codes: ["-32000 (Host or Origin not allowed)"] },
      { status: 405, codes: ["METHOD_NOT_ALLOWED (GET, DELETE)"] },
      { status: 413, codes: ["-32600 (body over 1 MiB)"] },
      { status: 415, codes: ["-32000 (Content-Type is not application/json)"] },
      { status: 429, codes: ["-32000 (hourly limit of non-tool methods)"] },
      { status: 503, codes: ["-32000 (token service unavailable)", "SERVICE_UNAVAILABLE"] },
    ],
    errorBody: JsonRpcError,
  },
];

/**
 * MCP answers are compressed from 8 KiB rather than the app's 1 KiB: a one-address answer carries
 * its record twice (the JSON text block and structuredContent), 1.1 to 1.7 KiB, and gzipping it
 * costs the server and the host more CPU than a kilobyte on the wire saves. Lists, job pages and
 * reverse pages (tens of KiB) and tools/list are still compressed.
 */
export const MCP_COMPRESS_THRESHOLD_BYTES = 8 * 1024;

/** Whether a request is addressed to the MCP endpoint. */
export function isMcpRequest(req: Request): boolean {
  const url = req.url;
  const path = url.indexOf("/", url.indexOf("//") + 2);
  return path >= 0 && url.startsWith("/mcp", path) && (url.length === path + 4 || url[path + 4] === "?");
}

function rpcError(status: number, code: number, message: string, headers: Record<string, string> = {}): Response {
  return Response.json({ jsonrpc: "2.0", id: null, error: { code, message } }, { status, headers });
}

type Message = { method?: unknown };

/** The caller (and the one tool called) travel to the per-request server factory in the SDK's pass-through authInfo. */
function authInfoOf(caller: McpCaller, only: string | undefined): AuthInfo {
  return { token: "", clientId: caller.kind, scopes: [], extra: { caller, only } };
}

export function mcpRoutes(deps: McpRouteDeps) {
  const { operations } = deps;
  const site = new URL(operations.config.publicUrl);
  // DNS rebinding: a Host or Origin naming another site is refused; loopback names are safe
  // (a rebinding attacker's page carries the attacker's host name, never these)
  const allowedHosts = [...new Set([site.hostname, ...localhostAllowedHostnames()])];
  const limiter = createHourlyLimiter(operations.db, operations.log);
  const serverFor = (caller: McpCaller, only: string | undefined) => buildMcpServer(operations, caller, only);
  // the 2026-07-28 revision (per-request envelope); 2025-era traffic is served below with JSON responses
  const modern = createMcpHandler(
    ({ authInfo }) => serverFor((authInfo?.extra?.caller as McpCaller) ?? { kind: "anonymous" }, authInfo?.extra?.only as string | undefined),
    {
      legacy: "reject",
      onerror: (err) => operations.log(`mcp: ${err.message}`, "warn"),
    },
  );

  async function serveLegacy(req: Request, parsedBody: unknown, caller: McpCaller, only: string | undefined): Promise<Response> {
    const server = serverFor(caller, only);
    const single = singleRequest(req, parsedBody);
    if (single) return await serveSingleRequest(server, single);
    const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    await server.connect(transport);
    // JSON mode: once the response exists nothing of the exchange is pending, and both are left to
    // the garbage collector (closing them builds a ConnectionClosed error per request for nobody)
    return await transport.handleRequest(req, { parsedBody });
  }

  const app = new Hono();

  // GET and DELETE (SSE streams and sessions) answer 405 through the app's table of known routes
  app.post("/mcp", async (c: Context) => {
    const req = c.req.raw;
    if (req.headers.has("host")) {
      const refused = hostHeaderValidationResponse(req, allowedHosts);
      if (refused) return refused;
    }
    const refused = originValidationResponse(req, allowedHosts);
    if (refused) return refused;
    if (!isJsonContentType(req.headers.get("content-type"))) {
      return rpcError(415, -32000, "Unsupported Media Type: send Content-Type: application/json");
    }

    let caller: McpCaller;
    try {
      caller = await identifyCaller(req, deps.verifyAccessToken);
    } catch (err) {
      operations.log(`mcp: token verification unavailable: ${err instanceof Error ? err.message : String(err)}`, "warn");
      return rpcError(503, -32000, "The token service is temporarily unavailable: retry shortly", { "Retry-After": "5" });
    }
    if (caller.kind === "rejected") {
      return unauthorizedResponse(operations.config.publicUrl, "The access token is invalid, expired or revoked: authorize again");
    }

    let text: string;
    try {
      text = new TextDecoder().decode((await readAtMost(req, ONE_MB)) ?? tooLarge("1 MiB"));
    } catch (err) {
      if (err instanceof ApiError) return rpcError(err.status, -32600, err.message, err.headers);
      throw err;
    }
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      return rpcError(400, -32700, "Parse error: the request body is not valid JSON");
    }
    const messages: Message[] = (Array.isArray(body) ? body : [body]).map((m) => (m !== null && typeof m === "object" ? m : {}));
    const toolCalls = messages.filter((m) => m.method === "tools/call").length;
    if (toolCalls > 0 && caller.kind === "anonymous") {
      return unauthorizedResponse(
        operations.config.publicUrl,
        "Calling a tool needs a credential: send Authorization: Bearer <API_KEY>, or connect with OAuth",
      );
    }
    const others = messages.length - toolCalls;
    if (others > 0) {
      const address = clientAddress(req, deps.peerAddress?.(req, c.env), operations.config.trustProxy);
      const verdict = await limiter.count(caller, { address, requests: others, now: operations.now() });
      if (!verdict.ok) {
        const who = verdict.kind === "account" ? "per account with a working credential" : "per IP address without a working credential";
        return rpcError(
          429,
          -32000,
          `Hourly limit reached (${verdict.kind}): ${verdict.limit} requests an hour ${who} for methods other than tools/call; retry after ${verdict.retryAfterSeconds} seconds`,
          { "Retry-After": String(verdict.retryAfterSeconds) },
        );
      }
    }

    const single = messages.length === 1 && toolCalls === 1 ? (messages[0] as { params?: { name?: unknown } }).params?.name : undefined;
    const only = typeof single === "string" ? single : undefined;
    if (await isLegacyRequest(req, body)) return await serveLegacy(req, body, caller, only);
    return await modern.fetch(req, { parsedBody: body, authInfo: authInfoOf(caller, only) });
  });

  return app;
}
