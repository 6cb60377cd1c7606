// MCP clients for tests: the v1 SDK client (what most hosts run, 2025-11-25 and older) and the
// v2 client pinned to the 2026-07-28 revision, both over Streamable HTTP with an optional key.
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport as TransportV1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from "@modelcontextprotocol/client";

export type ClientKind = "v1" | "v2";

/** What the tests use of either client. */
export interface McpTestClient {
  protocolVersion: string | undefined;
  listTools(): Promise<{ tools: Array<{ name: string; title?: string; description?: string; annotations?: Record<string, unknown>; inputSchema: unknown; outputSchema?: unknown }> }>;
  callTool(name: string, args: Record<string, unknown>): Promise<{ isError?: boolean; content: Array<{ type: string; text?: string }>; structuredContent?: any }>;
  close(): Promise<void>;
}

export async function connect(kind: ClientKind, url: string, key?: string): Promise<McpTestClient> {
  const requestInit = key ? { headers: { Authorization: `Bearer ${key}` } } : undefined;
  if (kind === "v1") {
    const client = new ClientV1({ name: "walletid-test-v1", version: "0.0.0" });
    const transport = new TransportV1(new URL(`${url}/mcp`), { requestInit });
    await client.connect(transport);
    return {
      protocolVersion: transport.protocolVersion,
      listTools: () => client.listTools() as any,
      callTool: (name, args) => client.callTool({ name, arguments: args }) as any,
      close: () => client.close(),
    };
  }
  const client = new ClientV2({ name: "walletid-test-v2", version: "0.0.0" }, { versionNegotiation: { mode: { pin: "2026-07-28" } } });
  const transport = new TransportV2(new URL(`${url}/mcp`), { requestInit });
  await client.connect(transport);
  return {
    protocolVersion: transport.protocolVersion,
    listTools: () => client.listTools() as any,
    callTool: (name, args) => client.callTool({ name, arguments: args }) as any,
    close: () => client.close(),
  };
}

/** A raw JSON-RPC POST to /mcp, as a 2025-era client sends it. */
export function rpc(url: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${url}/mcp`, {
    method: "POST",
    headers: { "Content-Type": "application/json", Accept: "application/json, text/event-stream", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}
