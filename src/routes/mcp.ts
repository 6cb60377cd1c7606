// POST {site_url}/mcp: the MCP tool server over Streamable HTTP, stateless, JSON responses, a fresh
// McpServer per request. Before any MCP work: DNS-rebinding checks, the credential step, the 401
// of a tools/call without credential, and the hourly limit of every other method.
import { Hono, type Context } from "hono";
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
import { readBodyLimited, ONE_MB } from "../http/body.ts";
import { identifyCaller, unauthorizedResponse, type McpCaller, type VerifyAccessToken } from "../mcp/credentials.ts";
import { clientAddress, createHourlyLimiter } from "../mcp/hourly.ts";
import { buildMcpServer, type McpDeps } from "../mcp/tools.ts";
import type { Operation } from "../openapi/operation.ts";

export interface McpRouteDeps extends McpDeps {
  verifyAccessToken?: VerifyAccessToken;
  /** The connection's peer address, from the runtime (src/main.ts); absent, "unknown". */
  peerAddress?: (req: Request, env: unknown) => string | undefined;
}

export const mcpOpenapi: Operation[] = [];

function rpcError(status: number, code: number, message: string, headers: Record<string, string> = {}): Response {
  return Response.json({ jsonrpc: "2.0", id: null, error: { code, message } }, { status, headers });
}

type Message = { method?: unknown };

/** The caller travels to the per-request server factory inside the SDK's pass-through authInfo. */
function authInfoOf(caller: McpCaller): AuthInfo {
  return { token: "", clientId: caller.kind, scopes: [], extra: { caller } };
}

export function mcpRoutes(deps: McpRouteDeps) {
  const { routes } = deps;
  const site = new URL(routes.config.publicUrl);
  // DNS rebinding: a Host or Origin naming another site is refused; loopback names are safe
  // (a rebinding attacker's page carries the attacker's host name, never these)
  const allowedHosts = [...new Set([site.hostname, ...localhostAllowedHostnames()])];
  const limiter = createHourlyLimiter(routes.db, routes.log);
  const serverFor = (caller: McpCaller) => buildMcpServer(deps, caller);
  // the 2026-07-28 revision (per-request envelope); 2025-era traffic is served below with JSON responses
  const modern = createMcpHandler(({ authInfo }) => serverFor((authInfo?.extra?.caller as McpCaller) ?? { kind: "anonymous" }), {
    legacy: "reject",
    onerror: (err) => routes.log(`mcp: ${err.message}`),
  });

  async function serveLegacy(req: Request, parsedBody: unknown, caller: McpCaller): Promise<Response> {
    const server = serverFor(caller);
    const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    await server.connect(transport);
    try {
      return await transport.handleRequest(req, { parsedBody });
    } finally {
      void transport.close().catch(() => {});
      void server.close().catch(() => {});
    }
  }

  const app = new Hono();

  app.all("/mcp", async (c: Context) => {
    const req = c.req.raw;
    if (req.method !== "POST") {
      return rpcError(405, -32000, "Method not allowed: this MCP server is stateless, send JSON-RPC with POST", { Allow: "POST, OPTIONS" });
    }
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
      routes.log(`mcp: token verification unavailable: ${err instanceof Error ? err.message : String(err)}`);
      return rpcError(503, -32000, "The token service is temporarily unavailable: retry shortly", { "Retry-After": "5" });
    }
    if (caller.kind === "rejected") {
      return unauthorizedResponse(routes.config.publicUrl, "The access token is invalid, expired or revoked: authorize again");
    }

    let text: string;
    try {
      text = new TextDecoder().decode(await readBodyLimited(req, ONE_MB, "1 MB"));
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
        routes.config.publicUrl,
        "Calling a tool needs a credential: send Authorization: Bearer <API_KEY>, or connect with OAuth",
      );
    }
    const others = messages.length - toolCalls;
    if (others > 0) {
      const address = clientAddress(req, deps.peerAddress?.(req, c.env), routes.config.trustProxy);
      const verdict = await limiter.count(caller, { address, requests: others, now: routes.now() });
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

    if (await isLegacyRequest(req, body)) return await serveLegacy(req, body, caller);
    return await modern.fetch(req, { parsedBody: body, authInfo: authInfoOf(caller) });
  });

  return app;
}
