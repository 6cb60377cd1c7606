// The common 2025-era exchange (one JSON-RPC request in a POST) served through the SDK's in-memory
// transport and answered with a string body. The SDK's HTTP transport answers the same exchange
// with Response.json, a body stream that every runtime adapter must pump through Web streams; a
// string body is written as it is (on Node, @hono/node-server's fast path). Anything else (batches,
// notifications, headers the HTTP transport refuses) is left to the HTTP transport.
import {
  InMemoryTransport,
  isInitializeRequest,
  isJSONRPCRequest,
  parseJSONRPCMessage,
  SUPPORTED_PROTOCOL_VERSIONS,
  type JSONRPCMessage,
  type JSONRPCRequest,
  type McpServer,
} from "@modelcontextprotocol/server";

/**
 * The body's request when the SDK's HTTP transport would hand it to the server without a word
 * (Accept naming both JSON and SSE, a supported or absent protocol version header, one valid
 * JSON-RPC request); undefined otherwise.
 */
export function singleRequest(req: Request, body: unknown): JSONRPCRequest | undefined {
  if (Array.isArray(body) || body === null || typeof body !== "object") return undefined;
  const accept = req.headers.get("accept");
  if (!accept?.includes("application/json") || !accept.includes("text/event-stream")) return undefined;
  let message: JSONRPCMessage;
  try {
    message = parseJSONRPCMessage(body);
  } catch {
    return undefined;
  }
  if (!isJSONRPCRequest(message)) return undefined;
  const version = req.headers.get("mcp-protocol-version");
  const initialize = message.method === "initialize" && isInitializeRequest(message);
  if (!initialize && version !== null && !SUPPORTED_PROTOCOL_VERSIONS.includes(version)) return undefined;
  return message;
}

/**
 * Serves `request` on `server`, which must be fresh (connected to nothing): the answer the HTTP
 * transport gives in JSON mode (notifications the server sends meanwhile are dropped, as that
 * mode drops them), as a string body.
 */
export async function serveSingleRequest(server: McpServer, request: JSONRPCRequest): Promise<Response> {
  const [ours, theirs] = InMemoryTransport.createLinkedPair();
  const answer = new Promise<JSONRPCMessage>((resolve) => {
    // the server's own messages: its answer is the one carrying the request's id and a result or an error
    ours.onmessage = (message) => {
      if ("id" in message && message.id === request.id && ("result" in message || "error" in message)) resolve(message);
    };
  });
  await server.connect(theirs);
  await ours.send(request);
  // bytes with their length declared: sent as they are, and left uncompressed below the threshold
  const body = new TextEncoder().encode(JSON.stringify(await answer));
  return new Response(body, {
    status: 200,
    headers: { "Content-Type": "application/json", "Content-Length": String(body.byteLength) },
  });
}
