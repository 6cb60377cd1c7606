// The MCP tools over standard input and output (npm run mcp:stdio), for local MCP hosts that launch
// a command and cannot send headers: one caller, known by the API key the command was started with.
import { serveStdio } from "@modelcontextprotocol/server/stdio";
import { keyDigest } from "../http/meter.ts";
import { isApiKeyShape } from "../ledger/keys.ts";
import type { OperationDeps } from "../operations/deps.ts";
import { buildMcpServer } from "./tools.ts";

/** Serves the tools on this process's standard streams; `close` stops serving and writes buffered usage. */
export async function serveMcpStdio(deps: OperationDeps, apiKey: string): Promise<{ close: () => Promise<void> }> {
  // a mistyped key is still served: its tool calls answer that the key is invalid, as over HTTP
  const caller = { kind: "api_key" as const, keyHash: isApiKeyShape(apiKey) ? await keyDigest(apiKey) : null };
  const handle = serveStdio(() => buildMcpServer(deps, caller), { onerror: (err) => deps.log(`mcp stdio: ${err.message}`) });
  return {
    close: async () => {
      await handle.close().catch(() => {});
      await deps.usage.flush().catch(() => {});
    },
  };
}
