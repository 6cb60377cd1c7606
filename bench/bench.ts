// npm run bench: every case of the service side by side in one run, over a generated PostgreSQL
// index of 1,000,000 wallets: a bare hono + postgres.js select by primary key (the reference),
// the project's baseline (bench/baseline-server.ts), metered lookups (single, batches of 50 and
// 200, one account and 100), reverse paging (1 and 8 clients), the access log and metrics on
// against off, then the MCP case, the job and the x402 purchase. Each HTTP case reports req/s,
// latency and the CPU time per request of its server process and of PostgreSQL (from /proc),
// which is steadier than req/s on a shared machine; the run ends with the ratios and the
// acceptance targets of issue 13, each marked met or missed.
//
//   npm run bench -- [--case all|lookup|reverse|mcp|job|purchase] [--duration 10] [--warmup 3]
//                    [--rounds 2] [--connections 32] [--reverse-clients 8] [--wallets 1000000]
//                    [--rebuild] [--server-wait 10] [--server-entry src/main.ts] [--job-size 100000]
//                    [--purchase-clients 8] [--before-entry PATH]
//
// --case runs one group: lookup (the lookup cases, in rounds), reverse (the two reverse cases, in
// rounds), mcp (bench/mcp.ts), job (bench/job.ts), purchase
// (bench/purchase.ts); the default runs them all. The cases of the rounds are interleaved
// (each round runs every case once, every other round in reverse order) so that noise from the
// rest of the machine hits them alike.
// --before-entry starts a second metered server from another checkout's entry (for example the
// previous release's src/main.ts on the same database) and drives its metered cases in the same
// rounds as this one's, so a change to metering is measured side by side under the same load.
// Figures go to stdout and .bench/results.json (.bench/<group>-results.json for one group other
// than lookup). Exits 1 when a server fails to start or dies.
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { closeSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { availableParallelism } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import autocannon from "autocannon";
import type { Db } from "../src/db/types.ts";
import { createBenchAccount, ensureBenchPlan, type BenchAccount } from "./accounts.ts";
import { startCpuWindow } from "./cpu.ts";
import { benchAddress, CROWD_HANDLE, prepareIndex } from "./generated-index.ts";
import { checkReverse, type ReverseFigures } from "./reverse.ts";
import { printJobReport, runJobCase, type JobCaseReport } from "./job.ts";
import { benchMcp, printMcpReport, type McpFigures } from "./mcp.ts";
import { printPurchaseReport, runPurchaseCase, type PurchaseCaseReport } from "./purchase.ts";
import {
  checkTargets,
  formatRatio,
  printCaseTable,
  printTargets,
  ratioOf,
  summarizeCase,
  type CaseSummary,
  type RoundFigures,
} from "./report.ts";
import { serverNodeFlags } from "../test/support/process.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const SERVER_URL = "postgres://postgres@127.0.0.1:5432";
const BENCH_DATABASE = process.env.BENCH_DATABASE ?? "walletid_bench";
const BATCH_SIZE = 50;
const LARGE_BATCH_SIZE = 200;
/** The accounts of the spread case: one key each, every request on a key drawn at random. */
const SPREAD_ACCOUNTS = 100;
/**
 * Processes of the logging comparison, each serving the app with the access log and metrics on one
 * port and without them on another (bench/logging-server.ts; see BenchCase.replicas). Separate
 * processes per configuration differ by themselves: with five of each, runs measured anything from
 * -1.0 to 6.1% (README, "The logging comparison").
 */
const LOGGING_PROCESSES = 4;

const GROUPS = ["lookup", "reverse", "mcp", "job", "purchase"] as const;
type Group = (typeof GROUPS)[number];

interface Settings {
  durationSeconds: number;
  warmupSeconds: number;
  rounds: number;
  connections: number;
  wallets: number;
  rebuild: boolean;
  serverWaitMinutes: number;
  serverEntry: string;
  reverseClients: number;
  case: "all" | Group;
  jobSize: number;
  beforeEntry: string | undefined;
  purchaseClients: number;
}

function readSettings(argv: string[]): Settings {
  const { values } = parseArgs({
    args: argv,
    options: {
      duration: { type: "string", default: "10" },
      warmup: { type: "string", default: "3" },
      rounds: { type: "string", default: "2" },
      connections: { type: "string", default: "32" },
      wallets: { type: "string", default: "1000000" },
      rebuild: { type: "boolean", default: false },
      "server-wait": { type: "string", default: "10" },
      "server-entry": { type: "string", default: "src/main.ts" },
      "reverse-clients": { type: "string", default: "8" },
      case: { type: "string", default: "all" },
      "job-size": { type: "string", default: "100000" },
      "before-entry": { type: "string" },
      "purchase-clients": { type: "string", default: "8" },
    },
  });
  const whole = (name: string, value: string, min: number) => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < min) throw new Error(`Cannot run the bench: --${name} must be a whole number of at least ${min}`);
    return n;
  };
  return {
    durationSeconds: whole("duration", values.duration, 1),
    warmupSeconds: whole("warmup", values.warmup, 0),
    rounds: whole("rounds", values.rounds, 1),
    connections: whole("connections", values.connections, 1),
    wallets: whole("wallets", values.wallets, 1000),
    rebuild: values.rebuild,
    serverWaitMinutes: whole("server-wait", values["server-wait"], 0),
    serverEntry: values["server-entry"],
    reverseClients: whole("reverse-clients", values["reverse-clients"], 1),
    case: (["all", ...GROUPS] as const).find((c) => c === values.case) ?? failCase(values.case),
    jobSize: whole("job-size", values["job-size"], 20),
    beforeEntry: values["before-entry"],
    purchaseClients: whole("purchase-clients", values["purchase-clients"], 1),
  };
}

function failCase(value: string): never {
  throw new Error(`Cannot run the bench: --case must be all, ${GROUPS.join(", ")}, not ${JSON.stringify(value)}`);
}

// ---- the bench accounts ---------------------------------------------------------------------

/**
 * A fresh ledger holding `count` accounts on an unlimited custom plan, fully metered, each with
 * credits to spare and one key.
 */
async function createBenchAccounts(db: Db, count: number, now: Date): Promise<BenchAccount[]> {
  // every run meters against the same empty ledger (CASCADE reaches keys, grants, debits, windows, usage)
  await db.exec("TRUNCATE accounts CASCADE");
  await ensureBenchPlan(db);
  const accounts: BenchAccount[] = [];
  for (let i = 0; i < count; i++) accounts.push(await createBenchAccount(db, "bench", now));
  return accounts;
}

/** What all the bench accounts were metered for over the run. */
async function readMetering(db: Db) {
  const [row] = await db.query<{ events: string; units: string; matches: string; debits: string; debited: string }>(
    `SELECT (SELECT coalesce(sum(requests), 0) FROM usage_counts) AS events,
            (SELECT coalesce(sum(units), 0) FROM usage_counts) AS units,
            (SELECT coalesce(sum(matches), 0) FROM usage_counts) AS matches,
            (SELECT count(DISTINCT call_key) FROM debits) AS debits,
            (SELECT coalesce(sum(matches), 0) FROM debits) AS debited`,
  );
  return {
    usageEvents: Number(row.events),
    rateUnits: Number(row.units),
    matchesReported: Number(row.matches),
    debitCalls: Number(row.debits),
    matchesDebited: Number(row.debited),
  };
}

// ---- child servers --------------------------------------------------------------------------

interface ChildServer {
  name: string;
  url: string;
  /** The server's own process (node runs tsx in it), whose CPU time the bench reads. */
  pid: number | undefined;
  /** Why the server stopped before it was asked to, if it did. */
  failure(): string | undefined;
  stop(): Promise<void>;
  /** The ports given in the variables named by startServer's `portEnv`. */
  ports: Record<string, number>;
}

/** A process of the logging comparison: its two ports, with the access log and metrics and without. */
interface LoggingServer {
  observed: ChildServer;
  quiet: ChildServer;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

// what a server entry prints while a module it imports is still being written by someone else
const NOT_READY = /ERR_MODULE_NOT_FOUND|Cannot find module|does not provide an export named/;

/**
 * Starts a server whose stdout and stderr go to a file under .bench/ (as a deployment's go to a
 * file or a journal), so its log lines cost the load generator nothing; the file's tail explains a
 * failed start, and it is removed when the server stops cleanly.
 */
function spawnServer(entry: string, env: Record<string, string>) {
  mkdirSync(join(ROOT, ".bench"), { recursive: true });
  const logPath = join(ROOT, ".bench", `server-${env.PORT}.log`);
  const fd = openSync(logPath, "w");
  // every server, the references too, with the Node options npm start gives the service
  const child = spawn(process.execPath, [...serverNodeFlags(), "--import", "tsx", entry], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ["ignore", fd, fd],
  });
  closeSync(fd);
  const output = () => {
    try {
      return readFileSync(logPath, "utf8").slice(-4000);
    } catch {
      return "";
    }
  };
  const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) =>
    child.once("exit", (code, signal) => resolve({ code, signal })),
  );
  return { child, exited, output, remove: () => rmSync(logPath, { force: true }) };
}

async function waitHealthy(url: string, exited: Promise<unknown>, withinMs: number): Promise<"healthy" | "exited" | "timeout"> {
  let gone = false;
  void exited.then(() => (gone = true));
  const deadline = Date.now() + withinMs;
  while (Date.now() < deadline) {
    if (gone) return "exited";
    try {
      const res = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(2000) });
      await res.arrayBuffer();
      if (res.status === 200) return "healthy";
    } catch {
      // not listening yet
    }
    await sleep(200);
  }
  return "timeout";
}

async function stopChild(child: ChildProcess, exited: Promise<unknown>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill("SIGTERM");
  const stopped = await Promise.race([exited.then(() => true), sleep(10_000).then(() => false)]);
  if (!stopped) {
    child.kill("SIGKILL");
    await exited;
  }
}

/** How many times a server is started again on other ports when one it was given was taken. */
const PORT_ATTEMPTS = 5;

/**
 * Starts `node --import tsx <entry>` and waits for GET /healthz to answer 200. While the entry
 * fails on a module that does not exist yet, retries every 30 s for up to `retryForMs`. A port is
 * free when freePort returns it, and may be taken before the server listens on it (by another
 * process's outgoing connection, which draws its port from the same range): a server that exits
 * with EADDRINUSE is started again on fresh ports, PORT and those named by `portEnv` alike.
 */
async function startServer(
  name: string,
  entry: string,
  env: Record<string, string>,
  options: { retryForMs: number; log: (line: string) => void; portEnv?: string[] },
): Promise<ChildServer> {
  const giveUpAt = Date.now() + options.retryForMs;
  let portAttempts = 0;
  for (;;) {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const ports: Record<string, number> = {};
    for (const variable of options.portEnv ?? []) ports[variable] = await freePort();
    const portVars = Object.fromEntries(Object.entries(ports).map(([k, v]) => [k, String(v)]));
    // no daily maintenance: a server runs what is due right after it starts and at every hourly
    // tick, and a stats pass over the whole index would land in whichever case it met
    const started = spawnServer(entry, {
      LOG_LEVEL: "silent",
      MAINTENANCE_AT: "off",
      ...env,
      ...portVars,
      PORT: String(port),
      HOST: "127.0.0.1",
    });
    let stopping = false;
    let failure: string | undefined;
    void started.exited.then(({ code, signal }) => {
      if (!stopping) failure = `the ${name} server exited (${signal ?? `code ${code}`}):\n${started.output().trim()}`;
    });
    const state = await waitHealthy(url, started.exited, 60_000);
    if (state === "healthy") {
      return {
        name,
        url,
        pid: started.child.pid,
        ports,
        failure: () => failure,
        stop: async () => {
          stopping = true;
          await stopChild(started.child, started.exited);
          if (!failure) started.remove();
        },
      };
    }
    stopping = true;
    await stopChild(started.child, started.exited);
    const output = started.output().trim();
    if (state === "exited" && /EADDRINUSE/.test(output) && ++portAttempts < PORT_ATTEMPTS) {
      options.log(`The ${name} server found a port taken; starting it again on others.`);
      continue;
    }
    if (state === "exited" && NOT_READY.test(output) && Date.now() + 30_000 < giveUpAt) {
      const missing = /Cannot find module '([^']+)'/.exec(output)?.[1] ?? output.split("\n").find((l) => NOT_READY.test(l));
      options.log(`The ${name} server cannot start yet (${missing}); retrying in 30 s.`);
      await sleep(30_000);
      continue;
    }
    const why = state === "timeout" ? "did not answer GET /healthz within 60 s" : "exited before answering GET /healthz";
    throw new Error(`Cannot start the ${name} server (${entry}): it ${why}:\n${output}`);
  }
}

// ---- cases --------------------------------------------------------------------------------

type CaseId =
  | "bare"
  | "baseline"
  | "metered"
  | "metered-accounts"
  | "batch"
  | "batch-200"
  | "batch-200-alone"
  | "metered-observed"
  | "metered-quiet"
  | "reverse-1"
  | "reverse-many"
  | "metered-before"
  | "batch-before";

type Drive = (seconds: number) => Promise<Omit<RoundFigures, "serverMicros" | "postgresMicros">>;

interface BenchCase {
  id: CaseId;
  label: string;
  /** The server whose process CPU time the case reports. */
  server: ChildServer;
  connections: number;
  walletsPerRequest: number;
  drive: Drive;
  /**
   * The case measured with this one in alternating slices of each round, so that both meet the
   * same moments of a shared machine (a 5% difference is below what one 10-second window
   * against the next can tell apart).
   */
  pairedWith?: CaseId;
  /**
   * The same case on several server processes, measured in turn and reported as one; a paired
   * case's replica p runs in the same process as its partner's replica p. Two processes started
   * alike differ by up to 14% in CPU per request for their whole life (measured: four identical
   * servers, 150 to 171 µs), more than the 5% a pair must resolve: compared within each process,
   * that difference falls on both cases alike.
   */
  replicas?: BenchCase[];
}

/** Half the picks are wallets in the index, half random addresses it has never seen. */
function randomWallet(wallets: number): string {
  return Math.random() < 0.5
    ? benchAddress(1 + Math.floor(Math.random() * wallets))
    : `0x${randomBytes(20).toString("hex")}`;
}

function autocannonDrive(url: string, connections: number, request: autocannon.Request): Drive {
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
function lookupCases(
  servers: { bare: ChildServer; baseline: ChildServer; real: ChildServer; logging: LoggingServer[]; before?: ChildServer },
  keys: { single: string; spread: string[] },
  settings: Settings,
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

/**
 * driveReverse in a process of its own (bench/reverse-client.ts): this process's heap,
 * grown by autocannon over the lookup cases, made the page latencies it measured include its own
 * major GCs.
 */
async function driveReverseApart(options: { url: string; apiKey: string; handle: string; clients: number; seconds: number }): Promise<ReverseFigures> {
  const args = [options.url, options.apiKey, options.handle, String(options.clients), String(options.seconds)];
  const child = spawn(process.execPath, ["--import", "tsx", "bench/reverse-client.ts", ...args], {
    cwd: ROOT,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stdout!.on("data", (c: Buffer) => (out += c.toString()));
  child.stderr!.on("data", (c: Buffer) => (err = (err + c.toString()).slice(-4000)));
  const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
  const line = out.trim().split("\n").at(-1);
  if (code !== 0 || !line) throw new Error(`The reverse client exited with ${code}: ${err.trim()}`);
  return JSON.parse(line) as ReverseFigures;
}

/** The reverse cases: one client paging alone (the latency target), and `reverseClients` together. */
function reverseCases(real: ChildServer, apiKey: string, reverseClients: number): BenchCase[] {
  const reverse = (id: CaseId, clients: number): BenchCase => ({
    id,
    label: `reverse pages of 100, ${clients} client${clients === 1 ? "" : "s"}`,
    server: real,
    connections: clients,
    walletsPerRequest: 100,
    drive: async (seconds) => {
      const f = await driveReverseApart({ url: real.url, apiKey, handle: CROWD_HANDLE, clients, seconds });
      return { rps: f.pagesPerSecond, p50Ms: f.p50Ms, p99Ms: f.p99Ms, requests: f.pages, failed: f.failures, statusCodes: {} };
    },
  });
  return [reverse("reverse-1", 1), reverse("reverse-many", reverseClients)];
}

/** One measured window of a case: its load figures and the CPU time the server and PostgreSQL spent. */
async function measure(db: Db, c: BenchCase, seconds: number): Promise<RoundFigures> {
  const window = await startCpuWindow(db, c.server.pid);
  const figures = await c.drive(seconds);
  return { ...figures, ...(await window.stop()) };
}

/** Slices of each case of a pair, per process and round. */
const PAIR_SLICES = 4;

/**
 * Unmeasured load of each case of a pair before a process's first slice in a round: the process
 * has been idle through the other processes' turns and the other cases (long enough for V8 to
 * shrink its heap). With slices that started cold, servers spent 225 to 320 µs of CPU a request
 * where the metered server, never idle for long, spent 138 in the same run.
 */
const PROCESS_WARMUP_SECONDS = 1;

/**
 * One round of two paired cases whose replicas share processes: process by process, after a
 * warm-up of both, PAIR_SLICES slices of each case of `seconds / (PAIR_SLICES * processes)`,
 * alternating, the first flipping with the process and the round. Per case its requests a second
 * over all its slices, the request-weighted mean of the slices' latency percentiles, and the sums
 * of everything else.
 */
async function measurePair(
  db: Db,
  pair: [BenchCase, BenchCase],
  seconds: number,
  round: number,
): Promise<{ figures: [RoundFigures, RoundFigures]; byProcess: number[] }> {
  const arms = pair.map((c) => c.replicas ?? [c]);
  const processes = Math.min(arms[0].length, arms[1].length);
  // at least 2 s: a slice starts with 32 connections being opened, and autocannon's per-second
  // average of a 1-second run rests on one sample
  const slice = Math.max(2, Math.round(seconds / (PAIR_SLICES * processes)));
  const slices: [RoundFigures[], RoundFigures[]] = [[], []];
  for (let p = 0; p < processes; p++) {
    for (const k of [0, 1]) await arms[k][p].drive(PROCESS_WARMUP_SECONDS);
    for (let i = 0; i < 2 * PAIR_SLICES; i++) {
      const k = (round + p + i) % 2;
      slices[k].push(await measure(db, arms[k][p], slice));
    }
  }
  // each process's own ratio of the first case's req/s to the second's
  const byProcess = Array.from({ length: processes }, (_, p) => {
    const [a, b] = slices.map((all) => combineSlices(all.slice(p * PAIR_SLICES, (p + 1) * PAIR_SLICES)));
    return a.rps / b.rps;
  });
  return { figures: [combineSlices(slices[0]), combineSlices(slices[1])], byProcess };
}

function combineSlices(parts: RoundFigures[]): RoundFigures {
  const requests = parts.reduce((n, p) => n + p.requests, 0);
  const weighted = (f: (p: RoundFigures) => number) => parts.reduce((x, p) => x + f(p) * p.requests, 0) / Math.max(1, requests);
  const total = (f: (p: RoundFigures) => number | null) => (parts.some((p) => f(p) === null) ? null : parts.reduce((x, p) => x + f(p)!, 0));
  const statusCodes: Record<string, number> = {};
  for (const p of parts) for (const [code, n] of Object.entries(p.statusCodes)) statusCodes[code] = (statusCodes[code] ?? 0) + n;
  // requests over the seconds the slices ran, pooled: a mean of the slices' own rates would weigh
  // a slice's start (its connections opened) as much in a short slice as in a long one
  const elapsed = parts.every((p) => p.elapsedSeconds !== undefined) ? parts.reduce((x, p) => x + p.elapsedSeconds!, 0) : 0;
  return {
    rps: elapsed > 0 ? requests / elapsed : parts.reduce((x, p) => x + p.rps, 0) / parts.length,
    elapsedSeconds: elapsed > 0 ? elapsed : undefined,
    p50Ms: weighted((p) => p.p50Ms),
    p99Ms: weighted((p) => p.p99Ms),
    requests,
    failed: parts.reduce((n, p) => n + p.failed, 0),
    statusCodes,
    serverMicros: total((p) => p.serverMicros),
    postgresMicros: total((p) => p.postgresMicros),
  };
}

/** The cases in rounds (every other round in reverse order, so no case always follows the same one), after a warm-up of each. */
async function runRounds(db: Db, cases: BenchCase[], settings: Settings, log: (line: string) => void): Promise<CaseSummary[]> {
  const total = cases.length * (settings.warmupSeconds + settings.rounds * settings.durationSeconds);
  log(
    `${cases.length} cases: ${settings.warmupSeconds} s warm-up, then ${settings.rounds} round${settings.rounds === 1 ? "" : "s"} of ${settings.durationSeconds} s each ` +
      `(about ${Math.ceil(total / 60)} min).`,
  );
  if (settings.warmupSeconds > 0) for (const c of cases) for (const r of c.replicas ?? [c]) await r.drive(settings.warmupSeconds);
  const runs = new Map<CaseId, RoundFigures[]>(cases.map((c) => [c.id, []]));
  const micros = (x: number | null, requests: number) => (x === null || requests === 0 ? "n/a" : (x / requests).toFixed(0));
  for (let round = 1; round <= settings.rounds; round++) {
    const measured = new Set<CaseId>();
    for (const c of round % 2 === 1 ? cases : [...cases].reverse()) {
      if (measured.has(c.id)) continue;
      const partner = cases.find((x) => x.id === c.pairedWith);
      let figures: Array<[BenchCase, RoundFigures]>;
      let byProcess: number[] = [];
      if (partner) {
        // in the order the cases are listed: measurePair flips which goes first by itself
        const pair: [BenchCase, BenchCase] = cases.indexOf(c) < cases.indexOf(partner) ? [c, partner] : [partner, c];
        const paired = await measurePair(db, pair, settings.durationSeconds, round);
        figures = paired.figures.map((f, i) => [pair[i], f]);
        byProcess = paired.byProcess;
      } else {
        figures = [[c, await measure(db, c, settings.durationSeconds)]];
      }
      for (const [done, f] of figures) {
        measured.add(done.id);
        runs.get(done.id)!.push(f);
        log(
          `  round ${round}  ${done.label.padEnd(48)} ${f.rps.toFixed(0).padStart(6)} req/s  p50 ${f.p50Ms.toFixed(1)} ms  p99 ${f.p99Ms.toFixed(1)} ms  ` +
            `server ${micros(f.serverMicros, f.requests)} µs/req  PG ${micros(f.postgresMicros, f.requests)} µs/req`,
        );
      }
      if (byProcess.length > 0) log(`  round ${round}  ${figures[0][0].id} / ${figures[1][0].id}, req/s in each process: ${byProcess.map((r) => r.toFixed(3)).join(", ")}`);
    }
  }
  return cases.map((c) => summarizeCase(c, runs.get(c.id)!));
}

/** The baseline must render exactly what the real endpoint renders, or the ratio means nothing. */
async function checkSameAnswers(servers: { real: string; baseline: string; bare: string }, keys: { single: string; spread: string[] }, wallets: number): Promise<string[]> {
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

// ---- main ---------------------------------------------------------------------------------

const RESULTS_FILE: Record<Settings["case"], string> = {
  all: "results.json",
  lookup: "results.json",
  reverse: "reverse-results.json",
  mcp: "mcp-results.json",
  job: "job-results.json",
  purchase: "purchase-results.json",
};

async function main(): Promise<number> {
  const settings = readSettings(process.argv.slice(2));
  const startedAt = performance.now();
  const log = (line: string) => console.log(line);
  const runs = (group: Group) => settings.case === "all" || settings.case === group;

  const index = await prepareIndex({
    serverUrl: SERVER_URL,
    adminDatabase: "test",
    database: BENCH_DATABASE,
    wallets: settings.wallets,
    rebuild: settings.rebuild,
    log,
  });
  const { db } = index;
  if (index.loadMs !== null) log(`Loaded the index in ${(index.loadMs / 1000).toFixed(1)} s (including VACUUM ANALYZE).`);
  const c = index.counts;
  log(`Index: ${c.wallets} wallets, ${c.links} links, ${c.farcasterAccounts} farcaster accounts, ${c.twitterReachability} reachability rows.`);

  const servers: ChildServer[] = [];
  let exitCode = 0;
  const stopAll = () => Promise.all(servers.map((s) => s.stop()));
  process.once("SIGINT", () => void stopAll().then(() => process.exit(130)));
  try {
    const [first, ...spread] = await createBenchAccounts(db, runs("lookup") ? 1 + SPREAD_ACCOUNTS : 1, new Date());
    const keys = { single: first.apiKey, spread: spread.map((a) => a.apiKey) };
    // the lookup servers run without a job worker polling beside them
    const env = { DATABASE_URL: index.databaseUrl, WORKER: "0" };
    const retryForMs = settings.serverWaitMinutes * 60_000;
    const start = (name: string, entry: string, serverEnv: Record<string, string>, portEnv?: string[]) =>
      startServer(name, entry, serverEnv, { retryForMs, log, portEnv });

    // the metered servers run without logs or metrics; the logging comparison has processes of
    // its own, LOGGING_PROCESSES each serving the app with both (an access line per request, to
    // its log file under .bench/) and without, measured side by side
    const loggingServers: LoggingServer[] = [];
    const startLogging = async (i: number): Promise<ChildServer> => {
      // half the processes create the app with the access log and metrics first, half the other:
      // the app created first serves faster (bench/logging-server.ts)
      const first = i % 2 === 1 ? "observed" : "quiet";
      const observed = await start(`logging-${i}`, "bench/logging-server.ts", { ...env, FIRST: first }, ["QUIET_PORT"]);
      const quiet = { ...observed, name: `logging-${i}-quiet`, url: `http://127.0.0.1:${observed.ports.QUIET_PORT}`, stop: async () => {} };
      loggingServers.push({ observed, quiet });
      // the port created second may open after PORT answered
      if ((await waitHealthy(quiet.url, new Promise(() => {}), 60_000)) !== "healthy") {
        await observed.stop();
        throw new Error(`Cannot start the logging server: ${quiet.url} did not answer GET /healthz`);
      }
      return observed;
    };
    const started = await Promise.allSettled([
      ...(runs("lookup") || runs("reverse") || runs("mcp") ? [start("real", settings.serverEntry, { ...env, METRICS: "off" })] : []),
      ...(runs("lookup")
        ? [
            start("bare", "bench/bare-server.ts", env),
            start("baseline", "bench/baseline-server.ts", env),
            ...Array.from({ length: LOGGING_PROCESSES }, (_, i) => startLogging(i + 1)),
            ...(settings.beforeEntry ? [start("before", settings.beforeEntry, env)] : []),
          ]
        : []),
    ]);
    for (const s of started) if (s.status === "fulfilled") servers.push(s.value);
    for (const s of started) if (s.status === "rejected") throw s.reason;
    const byName = (name: string) => servers.find((s) => s.name === name);
    const real = byName("real");

    const cases: BenchCase[] = [];
    if (runs("lookup")) {
      const [bare, baseline] = [byName("bare")!, byName("baseline")!];
      const logging = [...loggingServers].sort((a, b) => a.observed.name.localeCompare(b.observed.name));
      const problems = await checkSameAnswers({ real: real!.url, baseline: baseline.url, bare: bare.url }, keys, settings.wallets);
      if (problems.some((p) => p.includes(" answered "))) throw new Error(`Cannot run the bench: ${problems.join("\n")}`);
      for (const p of problems) log(`WARNING: ${p}`);
      cases.push(...lookupCases({ bare, baseline, real: real!, logging, before: byName("before") }, keys, settings));
    }
    if (runs("reverse")) {
      const holders = await checkReverse({ url: real!.url, apiKey: keys.single, handle: CROWD_HANDLE });
      log(`Reverse check: ${holders} holders of ${CROWD_HANDLE}, each once and in order; the reverse cases page them all, again and again.`);
      cases.push(...reverseCases(real!, keys.single, settings.reverseClients));
    }
    const summaries = cases.length > 0 ? await runRounds(db, cases, settings, log) : [];

    // a case that fails costs its own figures only: the run goes on, reports it, and exits 1
    const failed: Group[] = [];
    const attempt = async <T>(group: Group, run: () => Promise<T>): Promise<T | undefined> => {
      if (!runs(group)) return undefined;
      log("");
      try {
        return await run();
      } catch (err) {
        log(`The ${group} case failed: ${(err as Error).message}`);
        failed.push(group);
        exitCode = 1;
        return undefined;
      }
    };

    const mcp = await attempt("mcp", () => {
      log(`MCP: ${settings.connections} SDK clients calling walletid_resolve_wallets, beside REST GET /wallet from as many fetch callers.`);
      return benchMcp({
        url: real!.url,
        serverPid: real!.pid,
        db,
        apiKey: keys.single,
        clients: settings.connections,
        seconds: settings.durationSeconds,
        warmupSeconds: settings.warmupSeconds,
        rounds: settings.rounds,
        pickWallet: () => randomWallet(settings.wallets),
        log,
      });
    });
    for (const s of servers) if (s.failure()) throw new Error(s.failure());
    await stopAll();
    const metering = cases.length > 0 ? await readMetering(db) : undefined;

    const job = await attempt("job", () =>
      runJobCase({
        db,
        databaseUrl: index.databaseUrl,
        apiKey: first.apiKey,
        accountId: first.accountId,
        size: settings.jobSize,
        serverEntry: settings.serverEntry,
        startServer: start,
        log,
      }),
    );
    const purchase = await attempt("purchase", () =>
      runPurchaseCase({
        db,
        databaseUrl: index.databaseUrl,
        serverEntry: settings.serverEntry,
        clients: settings.purchaseClients,
        seconds: settings.durationSeconds,
        startServer: start,
        log,
      }),
    );

    // everything side by side at the end, where the run's last screen shows it
    const byId = Object.fromEntries(summaries.map((s) => [s.id, s])) as Partial<Record<CaseId, CaseSummary>>;
    const ratios = ratioLines(byId);
    if (summaries.length > 0) {
      log("");
      printCaseTable(summaries, log);
      log("");
      for (const line of ratios.lines) log(line);
      if (metering) {
        log(
          `metering over the rounds: ${metering.usageEvents} calls in /usage, ${metering.rateUnits} rate units counted, ` +
            `${metering.matchesDebited} matches debited over ${metering.debitCalls} calls`,
        );
      }
      for (const s of summaries) {
        if (s.failed > 0) log(`WARNING: ${s.label}: ${s.failed} failed requests (status codes by round: ${s.rounds.map((r) => JSON.stringify(r.statusCodes)).join(" ")})`);
      }
    }
    if (mcp) {
      log("");
      printMcpReport(mcp, log);
    }
    if (job) {
      log("");
      printJobReport(job, log);
    }
    if (purchase) {
      log("");
      printPurchaseReport(purchase, log);
    }
    const targets = checkTargets({ cases: byId, mcp, job, failed });
    log("");
    printTargets(targets, log);

    const results = {
      finishedAt: new Date().toISOString(),
      machine: { cpus: availableParallelism(), node: process.version },
      settings: { ...settings, batchSizes: [BATCH_SIZE, LARGE_BATCH_SIZE], spreadAccounts: SPREAD_ACCOUNTS },
      index: { database: BENCH_DATABASE, loadSeconds: index.loadMs === null ? null : index.loadMs / 1000, counts: index.counts },
      cases: byId,
      ratios: ratios.values,
      metering,
      mcp,
      job,
      purchase,
      failed,
      targets,
    };
    mkdirSync(join(ROOT, ".bench"), { recursive: true });
    writeFileSync(join(ROOT, ".bench", RESULTS_FILE[settings.case]), `${JSON.stringify(results, null, 2)}\n`);
    const seconds = Math.round((performance.now() - startedAt) / 1000);
    log(`Wrote .bench/${RESULTS_FILE[settings.case]} (the run took ${Math.floor(seconds / 60)} min ${seconds % 60} s)`);
  } catch (err) {
    console.error((err as Error).message);
    exitCode = 1;
  } finally {
    await stopAll();
    await db.close();
  }
  return exitCode;
}

/** The ratios between cases that were run: lines to print and the values for the results file. */
function ratioLines(byId: Partial<Record<CaseId, CaseSummary>>) {
  const pairs: Array<[name: string, a: CaseId, b: CaseId]> = [
    ["metered single / baseline", "metered", "baseline"],
    ["metered single / bare", "metered", "bare"],
    ["baseline / bare", "baseline", "bare"],
    [`${SPREAD_ACCOUNTS} accounts / 1 account`, "metered-accounts", "metered"],
    ["access log and metrics on / off", "metered-observed", "metered-quiet"],
    ["metered single / the same before", "metered", "metered-before"],
    [`batch of ${BATCH_SIZE} / the same before`, "batch", "batch-before"],
  ];
  const lines: string[] = [];
  const values: Record<string, ReturnType<typeof ratioOf>> = {};
  for (const [name, a, b] of pairs) {
    const [x, y] = [byId[a], byId[b]];
    if (!x || !y) continue;
    const r = ratioOf(x, y);
    values[name] = r;
    const rounds = x.rounds.map((round, i) => (round.rps / y.rounds[i].rps).toFixed(2)).join(", ");
    lines.push(`${name}: ${formatRatio(r)} (req/s by round: ${rounds})`);
  }
  return { lines, values };
}

main().then(
  (code) => process.exit(code),
  (err: Error) => {
    console.error(err.message.startsWith("Cannot") ? err.message : `Cannot run the bench: ${err.stack ?? err.message}`);
    process.exit(1);
  },
);
