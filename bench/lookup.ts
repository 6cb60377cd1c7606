// The lookup cases of the bench's rounds: the bare reference and the baseline against the real
// server's metered GET /wallet (one account and many) and POST /batch, driven by autocannon, and
// the logging comparison: the access log and metrics on against off within the same processes.
import { randomBytes } from "node:crypto";
import autocannon from "autocannon";
import { benchAddress } from "./generated-index.ts";
import type { BenchCase, CaseId, Drive } from "./rounds.ts";
import { waitHealthy, type ChildServer } from "./servers.ts";

export const BATCH_SIZE = 50;
export const LARGE_BATCH_SIZE = 200;
/** The accounts of the spread case: one key each, every request on a key drawn at random. */
export const SPREAD_ACCOUNTS = 100;
/**
 * Processes of the logging comparison, each serving the app with the access log and metrics on one
 * port and without them on another (bench/logging-server.ts; see BenchCase.replicas). Processes
 * started alike differ by themselves, so each configuration gets its own process only at the cost
 * of a figure that moves by several percent from run to run.
 */
const LOGGING_PROCESSES = 4;

/** A process of the logging comparison: its two ports, with the access log and metrics and without. */
export interface LoggingServer {
  observed: ChildServer;
  quiet: ChildServer;
}

type StartServer = (name: string, entry: string, env: Record<string, string>, portEnv?: string[]) => Promise<ChildServer>;

/**
 * Starts the processes of the logging comparison. Half create the app with the access log and
 * metrics first, half the other: the app a process creates first serves faster.
 */
export async function startLoggingServers(start: StartServer, env: Record<string, string>): Promise<LoggingServer[]> {
  const one = async (i: number): Promise<LoggingServer> => {
    const first = i % 2 === 1 ? "observed" : "quiet";
    const observed = await start(`logging-${i}`, "bench/logging-server.ts", { ...env, FIRST: first }, ["QUIET_PORT"]);
    const quiet = { ...observed, name: `logging-${i}-quiet`, url: `http://127.0.0.1:${observed.ports.QUIET_PORT}`, stop: async () => {} };
    // the port created second may open after PORT answered
    if ((await waitHealthy(quiet.url, new Promise(() => {}), 60_000)) !== "healthy") {
      await observed.stop();
      throw new Error(`Cannot start the logging server: ${quiet.url} did not answer GET /healthz`);
    }
    return { observed, quiet };
  };
  const started = await Promise.allSettled(Array.from({ length: LOGGING_PROCESSES }, (_, i) => one(i + 1)));
  const servers = started.flatMap((s) => (s.status === "fulfilled" ? [s.value] : []));
  const failed = started.find((s) => s.status === "rejected");
  if (failed) {
    await Promise.all(servers.map((s) => s.observed.stop()));
    throw failed.reason;
  }
  return servers;
}

/** Half the picks are wallets in the index, half random addresses it has never seen. */
export function randomWallet(wallets: number): string {
  return Math.random() < 0.5
    ? benchAddress(1 + Math.floor(Math.random() * wallets))
    : `0x${randomBytes(20).toString("hex")}`;
}

export function autocannonDrive(url: string, connections: number, request: autocannon.Request): Drive {
  return async (seconds) => {
    const result = await autocannon({ url, connections, duration: seconds, requests: [request] });
    return {
      rps: result.requests.average,
      elapsedSeconds: result.duration,
      p50Ms: result.latency.p50,
      p99Ms: result.latency.p99,
      requests: result.requests.total,
      failed: result.non2xx + result.errors + result.timeouts,
      statusCodes: Object.fromEntries(Object.entries(result.statusCodeStats).map(([code, s]) => [code, s.count])),
    };
  };
}

/** The lookup cases: each GET /wallet draws its address, each batch its wallets, per request. */
export function lookupCases(
  servers: { bare: ChildServer; baseline: ChildServer; real: ChildServer; logging: LoggingServer[]; before?: ChildServer },
  keys: { single: string; spread: string[] },
  settings: { connections: number; wallets: number },
): BenchCase[] {
  const { connections, wallets } = settings;
  const bearer = (key: string) => ({ Authorization: `Bearer ${key}` });
  const single = (headers: Record<string, string>): autocannon.Request => ({
    method: "GET",
    headers,
    setupRequest: (req) => ({ ...req, path: `/api/v1/wallet/${randomWallet(wallets)}` }),
  });
  const batch = (size: number): autocannon.Request => ({
    method: "POST",
    path: "/api/v1/batch",
    headers: { ...bearer(keys.single), "Content-Type": "application/json" },
    setupRequest: (req) => ({ ...req, body: JSON.stringify({ wallets: Array.from({ length: size }, () => randomWallet(wallets)) }) }),
  });
  const http = (id: CaseId, label: string, server: ChildServer, options: { request: autocannon.Request; connections?: number; wallets?: number }): BenchCase => {
    const conns = options.connections ?? connections;
    return { id, label, server, connections: conns, walletsPerRequest: options.wallets ?? 1, drive: autocannonDrive(server.url, conns, options.request) };
  };
  const spread: autocannon.Request = {
    method: "GET",
    setupRequest: (req) => ({
      ...req,
      headers: bearer(keys.spread[Math.floor(Math.random() * keys.spread.length)]),
      path: `/api/v1/wallet/${randomWallet(wallets)}`,
    }),
  };
  const { bare, baseline, real, logging, before } = servers;
  const twins = (id: CaseId, label: string, processes: ChildServer[], pairedWith: CaseId): BenchCase => {
    const replicas = processes.map((server) => http(id, label, server, { request: single(bearer(keys.single)) }));
    return { ...replicas[0], pairedWith, replicas };
  };
  return [
    http("bare", "bare: hono + postgres.js, select by primary key", bare, { request: single({}) }),
    http("baseline", "baseline GET /wallet (no auth, no metering)", baseline, { request: single({}) }),
    http("metered", "metered GET /wallet, 1 account", real, { request: single(bearer(keys.single)) }),
    http("metered-accounts", `metered GET /wallet, ${keys.spread.length} accounts`, real, { request: spread }),
    http("batch", `metered POST /batch of ${BATCH_SIZE}`, real, { request: batch(BATCH_SIZE), wallets: BATCH_SIZE }),
    http("batch-200", `metered POST /batch of ${LARGE_BATCH_SIZE}`, real, { request: batch(LARGE_BATCH_SIZE), wallets: LARGE_BATCH_SIZE }),
    // one caller: the latency of a large batch on its own, not its wait behind 31 others
    http("batch-200-alone", `metered POST /batch of ${LARGE_BATCH_SIZE}, alone`, real, {
      request: batch(LARGE_BATCH_SIZE),
      wallets: LARGE_BATCH_SIZE,
      connections: 1,
    }),
    // the processes of the logging comparison serve nothing else, so nothing but the logging and
    // metrics differs between their two ports (not even what the batches above left in a heap)
    twins("metered-observed", `metered GET /wallet, access log and metrics on (${logging.length} processes)`, logging.map((l) => l.observed), "metered-quiet"),
    twins("metered-quiet", `metered GET /wallet, the same processes with them off`, logging.map((l) => l.quiet), "metered-observed"),
    ...(before
      ? [
          http("metered-before", "metered GET /wallet, 1 account (before)", before, { request: single(bearer(keys.single)) }),
          http("batch-before", `metered POST /batch of ${BATCH_SIZE} (before)`, before, { request: batch(BATCH_SIZE), wallets: BATCH_SIZE }),
        ]
      : []),
  ];
}

/** The baseline must render exactly what the real endpoint renders, or the ratio means nothing. */
export async function checkSameAnswers(servers: { real: string; baseline: string; bare: string }, keys: { single: string; spread: string[] }, wallets: number): Promise<string[]> {
  const problems: string[] = [];
  const picks = [1, 2, 3, 20, 21, 1000, Math.floor(wallets / 2), wallets].map(benchAddress);
  picks.push(`0x${randomBytes(20).toString("hex")}`);
  for (const address of picks) {
    const [a, b] = await Promise.all([
      fetch(`${servers.real}/api/v1/wallet/${address}`, { headers: { Authorization: `Bearer ${keys.single}` } }),
      fetch(`${servers.baseline}/api/v1/wallet/${address}`),
    ]);
    const [bodyA, bodyB] = await Promise.all([a.text(), b.text()]);
    if (a.status !== 200) problems.push(`metered GET /wallet/${address} answered ${a.status}: ${bodyA}`);
    else if (b.status !== 200) problems.push(`baseline GET /wallet/${address} answered ${b.status}: ${bodyB}`);
    else if (bodyA !== bodyB) problems.push(`the two servers answer ${address} differently:\n  real:     ${bodyA}\n  baseline: ${bodyB}`);
  }
  // the bare reference reads the row the others build their record around
  const bare = await fetch(`${servers.bare}/api/v1/wallet/${picks[0]}`);
  const bareBody = await bare.text();
  if (bare.status !== 200 || !bareBody.includes(picks[0])) problems.push(`bare GET /wallet/${picks[0]} answered ${bare.status}: ${bareBody}`);
  for (const key of keys.spread) {
    const res = await fetch(`${servers.real}/api/v1/wallet/${picks[0]}`, { headers: { Authorization: `Bearer ${key}` } });
    const body = await res.text();
    if (res.status !== 200) problems.push(`metered GET /wallet with a key of the spread accounts answered ${res.status}: ${body}`);
  }
  const batch = await fetch(`${servers.real}/api/v1/batch`, {
    method: "POST",
    headers: { Authorization: `Bearer ${keys.single}`, "Content-Type": "application/json" },
    body: JSON.stringify({ wallets: Array.from({ length: LARGE_BATCH_SIZE }, () => randomWallet(wallets)) }),
  });
  const batchBody = await batch.text();
  if (batch.status !== 200) problems.push(`metered POST /batch answered ${batch.status}: ${batchBody}`);
  return problems;
}
