// The MCP case of npm run bench: walletid_resolve_wallets with one address through the v1 SDK
// client (Client + StreamableHTTPClientTransport, what most hosts run), side by side with REST
// GET /wallet driven the same way (fetch, the same number of concurrent callers, the same address
// mix, the same process), so the ratio measures the MCP envelope and the fresh server per
// request, not the load generator. The cases take turns in slices of a few seconds (each round
// gives each case `seconds` in all), so load that other work puts on a shared machine falls on
// all of them alike; rates are the calls over the time of all slices.
import { performance } from "node:perf_hooks";
import process from "node:process";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Db } from "../src/db/types.ts";
import { startCpuWindow } from "./cpu.ts";

export const MCP_RATIO_TARGET = 0.5;

/** How long a case runs before the next takes its turn. */
const SLICE_SECONDS = 5;

export interface CallFigures {
  label: string;
  callsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  failures: number;
  /** Calls per second in each round. */
  rounds: number[];
  /**
   * CPU microseconds per call over all rounds: the server process, PostgreSQL (the bench
   * database's backends and the server's helpers, as in the other cases), the load generator.
   * Null without /proc.
   */
  cpuUs: { server: number | null; database: number | null; client: number };
}

export interface McpFigures {
  clients: number;
  seconds: number;
  mcp: CallFigures;
  /** The same tools/call POSTed with fetch: the server's share of the MCP cost, without the SDK client's. */
  raw: CallFigures;
  rest: CallFigures;
  ratio: number;
  /** MCP / REST in each round. */
  roundRatios: number[];
  target: number;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

/** What some slices of one case add up to. */
interface Tally {
  calls: number;
  seconds: number;
  failures: number;
  latencies: number[];
  /** Microseconds; null once a slice could not read /proc. */
  cpu: { server: number | null; database: number | null; client: number };
}

function emptyTally(): Tally {
  return { calls: 0, seconds: 0, failures: 0, latencies: [], cpu: { server: 0, database: 0, client: 0 } };
}

const plus = (a: number | null, b: number | null) => (a === null || b === null ? null : a + b);

function addTally(into: Tally, t: Tally): void {
  into.calls += t.calls;
  into.seconds += t.seconds;
  into.failures += t.failures;
  for (const l of t.latencies) into.latencies.push(l);
  into.cpu.server = plus(into.cpu.server, t.cpu.server);
  into.cpu.database = plus(into.cpu.database, t.cpu.database);
  into.cpu.client += t.cpu.client;
}

/**
 * `clients` loops calling `call` until the deadline: calls, latencies, failures, and the CPU
 * time of the server process `serverPid`, of PostgreSQL and of this process.
 */
async function drive(clients: Array<() => Promise<void>>, seconds: number, cpu: { db: Db; serverPid: number | undefined }): Promise<Tally> {
  const latencies: number[] = [];
  let failures = 0;
  const window = await startCpuWindow(cpu.db, cpu.serverPid);
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
  const spent = await window.stop();
  return {
    calls: latencies.length,
    seconds: elapsed,
    failures,
    latencies,
    cpu: { server: spent.serverMicros, database: spent.postgresMicros, client: client.user + client.system },
  };
}

function figuresOf(label: string, rounds: Tally[]): CallFigures {
  const all = emptyTally();
  for (const r of rounds) addTally(all, r);
  const latencies = all.latencies.sort((a, b) => a - b);
  const perCall = (micros: number) => micros / Math.max(1, all.calls);
  return {
    label,
    callsPerSecond: all.calls / all.seconds,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    failures: all.failures,
    rounds: rounds.map((r) => r.calls / r.seconds),
    cpuUs: {
      server: all.cpu.server === null ? null : perCall(all.cpu.server),
      database: all.cpu.database === null ? null : perCall(all.cpu.database),
      client: perCall(all.cpu.client),
    },
  };
}

export async function benchMcp(options: {
  url: string;
  /** The server's process and the bench database, for the CPU figures. */
  serverPid: number | undefined;
  db: Db;
  apiKey: string;
  clients: number;
  seconds: number;
  warmupSeconds: number;
  rounds: number;
  pickWallet: () => string;
  log: (line: string) => void;
}): Promise<McpFigures> {
  const { url, apiKey, pickWallet } = options;
  const cpu = { db: options.db, serverPid: options.serverPid };
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
    if (options.warmupSeconds > 0) for (const c of cases) await drive(c.callers, options.warmupSeconds, cpu);
    const slices = Math.max(1, Math.round(options.seconds / SLICE_SECONDS));
    const rounds = new Map(cases.map((c) => [c.id, [] as Tally[]]));
    for (let round = 1; round <= options.rounds; round++) {
      const tallies = new Map(cases.map((c) => [c.id, emptyTally()]));
      for (let slice = 0; slice < slices; slice++) {
        // alternate the order so no case always runs right after the same neighbour
        for (const c of (round + slice) % 2 === 1 ? cases : [...cases].reverse()) {
          addTally(tallies.get(c.id)!, await drive(c.callers, options.seconds / slices, cpu));
        }
      }
      for (const c of cases) {
        const t = tallies.get(c.id)!;
        rounds.get(c.id)!.push(t);
        const f = figuresOf(c.label, [t]);
        options.log(`  round ${round}  ${c.label.padEnd(52)} ${f.callsPerSecond.toFixed(0).padStart(6)} calls/s  p50 ${f.p50Ms.toFixed(1)} ms  p99 ${f.p99Ms.toFixed(1)} ms  ${cpuLine(f.cpuUs)}`);
      }
    }
    const [mcp, raw, rest] = cases.map((c) => figuresOf(c.label, rounds.get(c.id)!));
    return {
      clients: options.clients,
      seconds: options.seconds,
      mcp,
      raw,
      rest,
      ratio: mcp.callsPerSecond / rest.callsPerSecond,
      roundRatios: mcp.rounds.map((r, i) => r / rest.rounds[i]),
      target: MCP_RATIO_TARGET,
    };
  } finally {
    await Promise.all(sessions.map((s) => s.close().catch(() => {})));
  }
}

function cpuLine(cpu: CallFigures["cpuUs"]): string {
  const us = (x: number | null) => (x === null ? "n/a" : x.toFixed(0));
  return `CPU µs/call: server ${us(cpu.server)}, PostgreSQL ${us(cpu.database)}, load generator ${us(cpu.client)}`;
}

export function printMcpReport(f: McpFigures, log: (line: string) => void): void {
  for (const c of [f.mcp, f.raw, f.rest]) {
    log(
      `${c.label}: ${c.callsPerSecond.toFixed(0)} calls/s, p50 ${c.p50Ms.toFixed(1)} ms, p99 ${c.p99Ms.toFixed(1)} ms, ` +
        `${c.failures} failures (by round: ${c.rounds.map((x) => x.toFixed(0)).join(", ")}); ${cpuLine(c.cpuUs)}`,
    );
  }
  log(
    `MCP / REST: ${f.ratio.toFixed(2)} (target >= ${f.target})${f.ratio < f.target ? "  BELOW TARGET" : ""}; ` +
      `by round ${f.roundRatios.map((r) => r.toFixed(2)).join(", ")}; ${f.clients} concurrent callers`,
  );
  log(`MCP without the SDK client / REST: ${(f.raw.callsPerSecond / f.rest.callsPerSecond).toFixed(2)}`);
}
