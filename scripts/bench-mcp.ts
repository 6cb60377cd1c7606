// The MCP case of npm run bench: walletid_resolve_wallets with one address through the v1 SDK
// client (Client + StreamableHTTPClientTransport, what most hosts run), side by side with REST
// GET /wallet driven the same way (fetch, the same number of concurrent callers, the same
// process), so the ratio measures the MCP envelope and the fresh server per request, not the
// load generator. Rounds alternate their order.
import { performance } from "node:perf_hooks";
import process from "node:process";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { cpuSeconds, cpuSpent, serverProcesses } from "./proc-cpu.ts";

export const MCP_RATIO_TARGET = 0.5;

export interface CallFigures {
  label: string;
  callsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  failures: number;
  rounds: number[];
  /** CPU microseconds per call (median of the rounds): the server process, its PostgreSQL backends, the load generator. */
  cpuUs: { server: number; database: number; client: number };
}

export interface McpFigures {
  clients: number;
  seconds: number;
  mcp: CallFigures;
  /** The same tools/call POSTed with fetch: the server's share of the MCP cost, without the SDK client's. */
  raw: CallFigures;
  rest: CallFigures;
  ratio: number;
  target: number;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

/**
 * `clients` loops calling `call` until the deadline: calls per second, latencies, failures, and the
 * CPU time per call of the server listening on `port`, of its PostgreSQL backends and of this process.
 */
async function drive(clients: Array<() => Promise<void>>, seconds: number, port: number) {
  const latencies: number[] = [];
  let failures = 0;
  const first = serverProcesses(port);
  const pids = () => [...(first.server === null ? [] : [first.server]), ...first.database];
  const before = cpuSeconds(pids());
  const clientBefore = process.cpuUsage();
  const deadline = performance.now() + seconds * 1000;
  const started = performance.now();
  await Promise.all(
    clients.map(async (call) => {
      while (performance.now() < deadline) {
        const t = performance.now();
        try {
          await call();
          latencies.push(performance.now() - t);
        } catch {
          failures++;
        }
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  const client = process.cpuUsage(clientBefore);
  // backends the pool opened during the run count too
  const last = serverProcesses(port);
  const after = cpuSeconds([...new Set([...pids(), ...last.database])]);
  const server = first.server === null ? new Map<number, number>() : new Map([[first.server, after.get(first.server) ?? 0]]);
  after.delete(first.server ?? -1);
  const calls = Math.max(1, latencies.length);
  const perCall = (seconds: number) => (seconds * 1e6) / calls;
  latencies.sort((a, b) => a - b);
  return {
    callsPerSecond: latencies.length / elapsed,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    failures,
    cpuUs: {
      server: perCall(cpuSpent(before, server)),
      database: perCall(cpuSpent(before, after)),
      client: perCall((client.user + client.system) / 1e6),
    },
  };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

export async function benchMcp(options: {
  url: string;
  apiKey: string;
  clients: number;
  seconds: number;
  warmupSeconds: number;
  rounds: number;
  pickWallet: () => string;
  log: (line: string) => void;
}): Promise<McpFigures> {
  const { url, apiKey, pickWallet } = options;
  const port = Number(new URL(url).port);
  const headers = { Authorization: `Bearer ${apiKey}` };
  const sessions = await Promise.all(
    Array.from({ length: options.clients }, async () => {
      const client = new Client({ name: "walletid-bench", version: "0" });
      await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { requestInit: { headers } }));
      return client;
    }),
  );
  const mcpCall = (client: Client) => async () => {
    const result = (await client.callTool({ name: "walletid_resolve_wallets", arguments: { wallets: [pickWallet()] } })) as {
      isError?: boolean;
      content: Array<{ text?: string }>;
    };
    if (result.isError) throw new Error(result.content[0]?.text ?? "tool error");
  };
  let id = 0;
  const rawCall = async () => {
    const res = await fetch(`${url}/mcp`, {
      method: "POST",
      headers: { ...headers, "Content-Type": "application/json", Accept: "application/json, text/event-stream", "Mcp-Protocol-Version": "2025-11-25" },
      body: JSON.stringify({ jsonrpc: "2.0", id: ++id, method: "tools/call", params: { name: "walletid_resolve_wallets", arguments: { wallets: [pickWallet()] } } }),
    });
    const body = (await res.json()) as { result?: { isError?: boolean } };
    if (res.status !== 200 || !body.result || body.result.isError) throw new Error(`tools/call answered ${res.status}`);
  };
  const restCall = async () => {
    const res = await fetch(`${url}/api/v1/wallet/${pickWallet()}`, { headers });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`GET /wallet answered ${res.status}`);
  };
  const cases = [
    { id: "mcp", label: "MCP walletid_resolve_wallets (1 address, SDK client)", callers: sessions.map(mcpCall) },
    { id: "raw", label: "MCP tools/call POSTed with fetch (no SDK client)", callers: sessions.map(() => rawCall) },
    { id: "rest", label: "REST GET /wallet (fetch)", callers: sessions.map(() => restCall) },
  ];
  try {
    if (options.warmupSeconds > 0) for (const c of cases) await drive(c.callers, options.warmupSeconds, port);
    const runs = new Map(cases.map((c) => [c.id, [] as Array<Awaited<ReturnType<typeof drive>>>]));
    for (let round = 1; round <= options.rounds; round++) {
      for (const c of round % 2 === 1 ? cases : [...cases].reverse()) {
        const figures = await drive(c.callers, options.seconds, port);
        runs.get(c.id)!.push(figures);
        options.log(`  round ${round}  ${c.label.padEnd(52)} ${figures.callsPerSecond.toFixed(0).padStart(6)} calls/s  p50 ${figures.p50Ms.toFixed(1)} ms  p99 ${figures.p99Ms.toFixed(1)} ms  ${cpuLine(figures.cpuUs)}`);
      }
    }
    const summary = (id: string, label: string): CallFigures => {
      const r = runs.get(id)!;
      return {
        label,
        callsPerSecond: median(r.map((x) => x.callsPerSecond)),
        p50Ms: median(r.map((x) => x.p50Ms)),
        p99Ms: median(r.map((x) => x.p99Ms)),
        failures: r.reduce((n, x) => n + x.failures, 0),
        rounds: r.map((x) => x.callsPerSecond),
        cpuUs: {
          server: median(r.map((x) => x.cpuUs.server)),
          database: median(r.map((x) => x.cpuUs.database)),
          client: median(r.map((x) => x.cpuUs.client)),
        },
      };
    };
    const mcp = summary("mcp", cases[0].label);
    const raw = summary("raw", cases[1].label);
    const rest = summary("rest", cases[2].label);
    return { clients: options.clients, seconds: options.seconds, mcp, raw, rest, ratio: mcp.callsPerSecond / rest.callsPerSecond, target: MCP_RATIO_TARGET };
  } finally {
    await Promise.all(sessions.map((s) => s.close().catch(() => {})));
  }
}

function cpuLine(cpu: CallFigures["cpuUs"]): string {
  return `CPU µs/call: server ${cpu.server.toFixed(0)}, PostgreSQL ${cpu.database.toFixed(0)}, load generator ${cpu.client.toFixed(0)}`;
}

export function printMcpReport(f: McpFigures, log: (line: string) => void): void {
  for (const c of [f.mcp, f.raw, f.rest]) {
    log(
      `${c.label}: ${c.callsPerSecond.toFixed(0)} calls/s, p50 ${c.p50Ms.toFixed(1)} ms, p99 ${c.p99Ms.toFixed(1)} ms, ` +
        `${c.failures} failures (by round: ${c.rounds.map((x) => x.toFixed(0)).join(", ")}); ${cpuLine(c.cpuUs)}`,
    );
  }
  log(`MCP / REST: ${f.ratio.toFixed(2)} (target >= ${f.target})${f.ratio < f.target ? "  BELOW TARGET" : ""}; ${f.clients} concurrent callers`);
  log(`MCP without the SDK client / REST: ${(f.raw.callsPerSecond / f.rest.callsPerSecond).toFixed(2)}`);
}
