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

interface SdkClient {
  connect(transport: never): Promise<void>;
  listTools(): Promise<unknown>;
  callTool(params: { name: string; arguments: Record<string, unknown> }): Promise<unknown>;
  close(): Promise<void>;
}

export async function connect(kind: ClientKind, url: string, key?: string): Promise<McpTestClient> {
  const requestInit = key ? { headers: { Authorization: `Bearer ${key}` } } : undefined;
  const endpoint = new URL(`${url}/mcp`);
  const [client, transport] =
    kind === "v1"
      ? [new ClientV1({ name: "walletid-test-v1", version: "0.0.0" }), new TransportV1(endpoint, { requestInit })]
      : [
          new ClientV2({ name: "walletid-test-v2", version: "0.0.0" }, { versionNegotiation: { mode: { pin: "2026-07-28" } } }),
          new TransportV2(endpoint, { requestInit }),
        ];
  const sdk = client as unknown as SdkClient;
  await sdk.connect(transport as never);
  return {
    protocolVersion: transport.protocolVersion,
    listTools: () => sdk.listTools() as never,
    callTool: (name, args) => sdk.callTool({ name, arguments: args }) as never,
    close: () => sdk.close(),
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
