// npm run bench: metered single lookups and batches on the real server against unmetered single
// lookups on a baseline of the same stack, over a generated PostgreSQL index of 1,000,000 wallets.
//
//   npm run bench -- [--duration 15] [--warmup 5] [--rounds 2] [--connections 32]
//                    [--wallets 1000000] [--rebuild] [--server-wait 10] [--server-entry src/main.ts]
//                    [--reverse-clients 8] [--case all|lookup|reverse|mcp|job|purchase] [--job-size 100000]
//                    [--purchase-clients 8] [--before-entry PATH] [--accounts N]
//
// --case job runs only the async job case (scripts/bench-job.ts), --case mcp only the MCP case
// (scripts/bench-mcp.ts), --case purchase only the x402 purchase case (scripts/bench-purchase.ts);
// the default runs everything.
// --before-entry starts a second metered server from another checkout's entry (for example the
// previous release's src/main.ts on the same database) and drives its metered cases in the same
// rounds as this one's, so a change to metering is measured side by side under the same load.
// --accounts N (N > 1) adds a metered GET /wallet case whose requests spread over N accounts, one
// key each, beside the one-account case. Every lookup case also reports the CPU time per request
// of its server and of the PostgreSQL backends connected to the bench database (/proc).
// Figures go to stdout and .bench/results.json. Exits 1 when a server fails to start or dies.
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
import { createAccount, grantCredits } from "../src/ledger/accounts.ts";
import { createApiKey } from "../src/ledger/keys.ts";
import { benchAddress, CROWD_HANDLE, prepareIndex } from "./bench-index.ts";
import { benchReverse, type ReverseFigures } from "./bench-reverse.ts";
import { printJobReport, runJobCase, type JobCaseReport } from "./bench-job.ts";
import { benchMcp, printMcpReport, type McpFigures } from "./bench-mcp.ts";
import { printPurchaseReport, runPurchaseCase, type PurchaseCaseReport } from "./bench-purchase.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const SERVER_URL = "postgres://postgres@127.0.0.1:5432";
const BENCH_DATABASE = process.env.BENCH_DATABASE ?? "walletid_bench";
const BENCH_PLAN = "BenchCustom";
const BATCH_SIZE = 50;
const RATIO_TARGET = 0.6;

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
  case: "all" | "lookup" | "reverse" | "mcp" | "job" | "purchase";
  jobSize: number;
  beforeEntry: string | undefined;
  purchaseClients: number;
  accounts: number;
}

function readSettings(argv: string[]): Settings {
  const { values } = parseArgs({
    args: argv,
    options: {
      duration: { type: "string", default: "15" },
      warmup: { type: "string", default: "5" },
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
      accounts: { type: "string", default: "1" },
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
    case: (["all", "lookup", "reverse", "mcp", "job", "purchase"] as const).find((c) => c === values.case) ?? failCase(values.case),
    jobSize: whole("job-size", values["job-size"], 20),
    beforeEntry: values["before-entry"],
    purchaseClients: whole("purchase-clients", values["purchase-clients"], 1),
    accounts: whole("accounts", values.accounts, 1),
  };
}

function failCase(value: string): never {
  throw new Error(`Cannot run the bench: --case must be all, lookup, reverse, mcp, job or purchase, not ${JSON.stringify(value)}`);
}

// ---- the bench account ----------------------------------------------------------------------

/** A fresh ledger holding one account on an unlimited custom plan, fully metered, with credits to spare. */
async function createBenchAccount(db: Db, now: Date): Promise<{ accountId: string; apiKey: string }> {
  // every run meters against the same empty ledger (CASCADE reaches keys, grants, debits, windows, usage)
  await db.exec("TRUNCATE accounts CASCADE");
  // null limits never throttle, yet meter_call still counts every window and debits every match
  await db.query(
    `INSERT INTO plans (name, rank, requests_per_minute, requests_per_day, requests_per_month, max_batch_size)
     VALUES ($1, 100, NULL, NULL, NULL, 1000)
     ON CONFLICT (name) DO UPDATE SET rank = 100, requests_per_minute = NULL, requests_per_day = NULL,
       requests_per_month = NULL, max_batch_size = 1000`,
    [BENCH_PLAN],
  );
  const { accountId } = await createAccount(db, { now });
  await db.query("UPDATE accounts SET plan_override = $2 WHERE id = $1", [accountId, BENCH_PLAN]);
  const grant = await grantCredits(db, { accountId, pack: "Index", quantity: 40, grantKey: "bench", now });
  if (!grant.granted) throw new Error("Cannot set up the bench account: the credit grant was not written");
  const key = await createApiKey(db, { accountId, name: "bench", now });
  if (!key.ok) throw new Error(`Cannot set up the bench account: ${key.code}`);
  return { accountId, apiKey: key.apiKey };
}

/** Keys of `count` more accounts like the bench account's (same plan and credits), for --accounts. */
async function createMoreBenchKeys(db: Db, count: number, now: Date): Promise<string[]> {
  const keys: string[] = [];
  for (let i = 0; i < count; i++) {
    const { accountId } = await createAccount(db, { now });
    await db.query("UPDATE accounts SET plan_override = $2 WHERE id = $1", [accountId, BENCH_PLAN]);
    await grantCredits(db, { accountId, pack: "Index", quantity: 40, grantKey: "bench", now });
    const key = await createApiKey(db, { accountId, name: "bench", now });
    if (!key.ok) throw new Error(`Cannot set up the bench accounts: ${key.code}`);
    keys.push(key.apiKey);
  }
  return keys;
}

// ---- CPU time per request -------------------------------------------------------------------

const TICK_US = 10_000; // USER_HZ is 100 on Linux

/** utime + stime of a process in clock ticks, 0 once it is gone. */
function cpuTicks(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return 0;
  }
}

/** CPU ticks of the server and of the PostgreSQL backends connected to the bench database. */
async function cpuSample(db: Db, serverPid: number): Promise<{ server: number; backends: Map<number, number> }> {
  const rows = await db.query<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", [BENCH_DATABASE]);
  return { server: cpuTicks(serverPid), backends: new Map(rows.map((r) => [r.pid, cpuTicks(r.pid)])) };
}

function cpuSpent(before: { server: number; backends: Map<number, number> }, after: { server: number; backends: Map<number, number> }) {
  let pg = 0;
  for (const [pid, ticks] of after.backends) pg += ticks - (before.backends.get(pid) ?? 0);
  return { serverUs: (after.server - before.server) * TICK_US, pgUs: pg * TICK_US };
}

async function readMetering(db: Db, accountId: string) {
  const [row] = await db.query<{ events: string; units: string; matches: string; debits: string; debited: string }>(
    `SELECT (SELECT coalesce(sum(requests), 0) FROM usage_counts WHERE account_id = $1) AS events,
            (SELECT coalesce(sum(units), 0) FROM usage_counts WHERE account_id = $1) AS units,
            (SELECT coalesce(sum(matches), 0) FROM usage_counts WHERE account_id = $1) AS matches,
            (SELECT count(DISTINCT call_key) FROM debits WHERE account_id = $1) AS debits,
            (SELECT coalesce(sum(matches), 0) FROM debits WHERE account_id = $1) AS debited`,
    [accountId],
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
  pid: number;
  /** Why the server stopped before it was asked to, if it did. */
  failure(): string | undefined;
  stop(): Promise<void>;
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
  const child = spawn(process.execPath, ["--import", "tsx", entry], {
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

/**
 * Starts `node --import tsx <entry>` and waits for GET /healthz to answer 200. While the entry
 * fails on a module that does not exist yet, retries every 30 s for up to `retryForMs`.
 */
async function startServer(
  name: string,
  entry: string,
  env: Record<string, string>,
  options: { retryForMs: number; log: (line: string) => void },
): Promise<ChildServer> {
  const giveUpAt = Date.now() + options.retryForMs;
  for (;;) {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const started = spawnServer(entry, { LOG_LEVEL: "silent", ...env, PORT: String(port), HOST: "127.0.0.1" });
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
        pid: started.child.pid!,
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

// ---- load ---------------------------------------------------------------------------------

type CaseId =
  | "baseline"
  | "metered"
  | "batch"
  | "metered-before"
  | "batch-before"
  | "metered-observed"
  | "metered-accounts"
  | "metered-accounts-before";

interface BenchCase {
  id: CaseId;
  label: string;
  url: string;
  request: autocannon.Request;
  walletsPerRequest: number;
}

interface RunFigures {
  rps: number;
  p50Ms: number;
  p99Ms: number;
  requests: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  statusCodes: Record<string, number>;
  /** CPU microseconds per request of the server and of PostgreSQL. */
  serverUsPerRequest?: number;
  pgUsPerRequest?: number;
}

/** Half the picks are wallets in the index, half random addresses it has never seen. */
function randomWallet(wallets: number): string {
  return Math.random() < 0.5
    ? benchAddress(1 + Math.floor(Math.random() * wallets))
    : `0x${randomBytes(20).toString("hex")}`;
}

function benchCases(
  servers: { real: string; baseline: string; observed: string; before?: string },
  apiKey: string,
  wallets: number,
  moreKeys: string[],
): BenchCase[] {
  const auth = { Authorization: `Bearer ${apiKey}` };
  const single = (req: autocannon.Request) => ({ ...req, path: `/api/v1/wallet/${randomWallet(wallets)}` });
  const keys = [apiKey, ...moreKeys];
  const spread = (req: autocannon.Request) => ({
    ...req,
    path: `/api/v1/wallet/${randomWallet(wallets)}`,
    headers: { Authorization: `Bearer ${keys[Math.floor(Math.random() * keys.length)]}` },
  });
  const accounts = (url: string, suffix: string): BenchCase[] =>
    moreKeys.length === 0
      ? []
      : [
          {
            id: `metered-accounts${suffix}` as CaseId,
            label: `metered GET /wallet, ${keys.length} accounts${suffix ? ` (${suffix.slice(1)})` : ""}`,
            url,
            request: { method: "GET", setupRequest: spread },
            walletsPerRequest: 1,
          },
        ];
  const metered = (url: string, suffix: string): BenchCase[] => [
    {
      id: `metered${suffix}` as CaseId,
      label: `metered GET /wallet${suffix ? ` (${suffix.slice(1)})` : ""}`,
      url,
      request: { method: "GET", headers: auth, setupRequest: single },
      walletsPerRequest: 1,
    },
    {
      id: `batch${suffix}` as CaseId,
      label: `metered POST /batch (${BATCH_SIZE} wallets)${suffix ? ` (${suffix.slice(1)})` : ""}`,
      url,
      request: {
        method: "POST",
        path: "/api/v1/batch",
        headers: { ...auth, "Content-Type": "application/json" },
        setupRequest: (req) => ({
          ...req,
          body: JSON.stringify({ wallets: Array.from({ length: BATCH_SIZE }, () => randomWallet(wallets)) }),
        }),
      },
      walletsPerRequest: BATCH_SIZE,
    },
    ...accounts(url, suffix),
  ];
  return [
    {
      id: "baseline",
      label: "baseline GET /wallet (no auth, no metering)",
      url: servers.baseline,
      request: { method: "GET", setupRequest: single },
      walletsPerRequest: 1,
    },
    ...metered(servers.real, ""),
    {
      id: "metered-observed",
      label: "metered GET /wallet (access log and metrics on)",
      url: servers.observed,
      request: { method: "GET", headers: auth, setupRequest: single },
      walletsPerRequest: 1,
    },
    ...(servers.before ? metered(servers.before, "-before") : []),
  ];
}

async function runLoad(c: BenchCase, seconds: number, connections: number, cpu?: { db: Db; serverPid: number }): Promise<RunFigures> {
  const before = cpu && (await cpuSample(cpu.db, cpu.serverPid));
  const result = await autocannon({ url: c.url, connections, duration: seconds, requests: [c.request] });
  const spent = cpu && before && cpuSpent(before, await cpuSample(cpu.db, cpu.serverPid));
  return {
    ...(spent && result.requests.total > 0
      ? { serverUsPerRequest: spent.serverUs / result.requests.total, pgUsPerRequest: spent.pgUs / result.requests.total }
      : {}),
    rps: result.requests.average,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    requests: result.requests.total,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    statusCodes: Object.fromEntries(Object.entries(result.statusCodeStats).map(([code, s]) => [code, s.count])),
  };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** The baseline must render exactly what the real endpoint renders, or the ratio means nothing. */
async function checkSameAnswers(real: string, baseline: string, apiKey: string, wallets: number): Promise<string[]> {
  const problems: string[] = [];
  const picks = [1, 2, 3, 20, 21, 1000, Math.floor(wallets / 2), wallets].map(benchAddress);
  picks.push(`0x${randomBytes(20).toString("hex")}`);
  for (const address of picks) {
    const [a, b] = await Promise.all([
      fetch(`${real}/api/v1/wallet/${address}`, { headers: { Authorization: `Bearer ${apiKey}` } }),
      fetch(`${baseline}/api/v1/wallet/${address}`),
    ]);
    const [bodyA, bodyB] = await Promise.all([a.text(), b.text()]);
    if (a.status !== 200) problems.push(`metered GET /wallet/${address} answered ${a.status}: ${bodyA}`);
    else if (b.status !== 200) problems.push(`baseline GET /wallet/${address} answered ${b.status}: ${bodyB}`);
    else if (bodyA !== bodyB) problems.push(`the two servers answer ${address} differently:\n  real:     ${bodyA}\n  baseline: ${bodyB}`);
  }
  const batch = await fetch(`${real}/api/v1/batch`, {
    method: "POST",
    headers: { Authorization: `Bearer ${apiKey}`, "Content-Type": "application/json" },
    body: JSON.stringify({ wallets: Array.from({ length: BATCH_SIZE }, () => randomWallet(wallets)) }),
  });
  const batchBody = await batch.text();
  if (batch.status !== 200) problems.push(`metered POST /batch answered ${batch.status}: ${batchBody}`);
  return problems;
}

// ---- report -------------------------------------------------------------------------------

interface CaseReport {
  label: string;
  rps: number;
  walletsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  rounds: RunFigures[];
}

function summarize(c: BenchCase, rounds: RunFigures[]): CaseReport {
  const rps = median(rounds.map((r) => r.rps));
  return {
    label: c.label,
    rps,
    walletsPerSecond: rps * c.walletsPerRequest,
    p50Ms: median(rounds.map((r) => r.p50Ms)),
    p99Ms: median(rounds.map((r) => r.p99Ms)),
    non2xx: rounds.reduce((n, r) => n + r.non2xx, 0),
    errors: rounds.reduce((n, r) => n + r.errors, 0),
    timeouts: rounds.reduce((n, r) => n + r.timeouts, 0),
    rounds,
  };
}

function printTable(reports: CaseReport[]): void {
  const header = ["case", "req/s", "wallets/s", "p50 ms", "p99 ms", "non-2xx", "errors", "server µs/req", "pg µs/req", "req/s by round"];
  const cpu = (r: CaseReport, field: "serverUsPerRequest" | "pgUsPerRequest") =>
    r.rounds.every((x) => x[field] !== undefined) ? median(r.rounds.map((x) => x[field]!)).toFixed(0) : "-";
  const rows = reports.map((r) => [
    r.label,
    r.rps.toFixed(0),
    r.walletsPerSecond.toFixed(0),
    r.p50Ms.toFixed(1),
    r.p99Ms.toFixed(1),
    String(r.non2xx),
    String(r.errors + r.timeouts),
    cpu(r, "serverUsPerRequest"),
    cpu(r, "pgUsPerRequest"),
    r.rounds.map((x) => x.rps.toFixed(0)).join(", "),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i].length)));
  const line = (cells: string[]) =>
    cells.map((cell, i) => (i === 0 || i === cells.length - 1 ? cell.padEnd(widths[i]) : cell.padStart(widths[i]))).join("  ");
  console.log(line(header));
  console.log(widths.map((w) => "-".repeat(w)).join("  "));
  for (const row of rows) console.log(line(row));
}

// ---- main ---------------------------------------------------------------------------------

async function main(): Promise<number> {
  const settings = readSettings(process.argv.slice(2));
  const log = (line: string) => console.log(line);

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
    const { accountId, apiKey } = await createBenchAccount(db, new Date());
    // the lookup servers run without a job worker polling beside them
    const env = { DATABASE_URL: index.databaseUrl, WORKER: "0" };
    const retryForMs = settings.serverWaitMinutes * 60_000;
    const jobCase = async (): Promise<JobCaseReport> => {
      const report = await runJobCase({
        db,
        databaseUrl: index.databaseUrl,
        apiKey,
        accountId,
        size: settings.jobSize,
        serverEntry: settings.serverEntry,
        startServer: (name, entry, serverEnv) => startServer(name, entry, serverEnv, { retryForMs, log }),
        log,
      });
      console.log("");
      printJobReport(report, log);
      return report;
    };
    const purchaseCase = async (): Promise<PurchaseCaseReport> => {
      const report = await runPurchaseCase({
        db,
        databaseUrl: index.databaseUrl,
        serverEntry: settings.serverEntry,
        clients: settings.purchaseClients,
        seconds: settings.durationSeconds,
        startServer: (name, entry, serverEnv) => startServer(name, entry, serverEnv, { retryForMs, log }),
        log,
      });
      console.log("");
      printPurchaseReport(report, log);
      return report;
    };
    if (settings.case === "purchase") {
      const purchase = await purchaseCase();
      mkdirSync(join(ROOT, ".bench"), { recursive: true });
      writeFileSync(join(ROOT, ".bench", "purchase-results.json"), `${JSON.stringify({ finishedAt: new Date().toISOString(), settings, purchase }, null, 2)}\n`);
      log("Wrote .bench/purchase-results.json");
      return exitCode;
    }
    if (settings.case === "job") {
      const job = await jobCase();
      mkdirSync(join(ROOT, ".bench"), { recursive: true });
      writeFileSync(join(ROOT, ".bench", "job-results.json"), `${JSON.stringify({ finishedAt: new Date().toISOString(), settings, job }, null, 2)}\n`);
      log("Wrote .bench/job-results.json");
      return exitCode;
    }
    const reverseCase = async (url: string): Promise<ReverseFigures> => {
      // clients walking every page of one handle
      log(`Reverse lookups: ${settings.reverseClients} clients paging the handle ${CROWD_HANDLE} to the end for ${settings.durationSeconds} s.`);
      const figures = await benchReverse({
        url,
        apiKey,
        handle: CROWD_HANDLE,
        clients: settings.reverseClients,
        seconds: settings.durationSeconds,
        log,
      });
      console.log(
        `${figures.label}: ${figures.pagesPerSecond.toFixed(0)} pages/s (${figures.walletsPerSecond.toFixed(0)} wallets/s), ` +
          `page latency p50 ${figures.p50Ms.toFixed(1)} ms, p99 ${figures.p99Ms.toFixed(1)} ms, max ${figures.maxMs.toFixed(1)} ms; ` +
          `${figures.clients} clients, ${figures.walks} complete walks of ${figures.holders / 100} pages, ${figures.failures} failures`,
      );
      return figures;
    };
    const mcpCase = async (url: string): Promise<McpFigures> => {
      log(`MCP: ${settings.connections} SDK clients calling walletid_resolve_wallets, beside REST GET /wallet from as many fetch callers.`);
      const figures = await benchMcp({
        url,
        apiKey,
        clients: settings.connections,
        seconds: settings.durationSeconds,
        warmupSeconds: settings.warmupSeconds,
        rounds: settings.rounds,
        pickWallet: () => randomWallet(settings.wallets),
        log,
      });
      console.log("");
      printMcpReport(figures, log);
      return figures;
    };
    if (settings.case === "mcp") {
      const real = await startServer("real", settings.serverEntry, env, { retryForMs, log });
      servers.push(real);
      const mcp = await mcpCase(real.url);
      if (real.failure()) throw new Error(real.failure());
      mkdirSync(join(ROOT, ".bench"), { recursive: true });
      writeFileSync(join(ROOT, ".bench", "mcp-results.json"), `${JSON.stringify({ finishedAt: new Date().toISOString(), settings, mcp }, null, 2)}\n`);
      log("Wrote .bench/mcp-results.json");
      return exitCode;
    }
    if (settings.case === "reverse") {
      const real = await startServer("real", settings.serverEntry, env, { retryForMs, log });
      servers.push(real);
      const reverse = await reverseCase(real.url);
      if (real.failure()) throw new Error(real.failure());
      mkdirSync(join(ROOT, ".bench"), { recursive: true });
      writeFileSync(join(ROOT, ".bench", "reverse-results.json"), `${JSON.stringify({ finishedAt: new Date().toISOString(), settings, reverse }, null, 2)}\n`);
      log("Wrote .bench/reverse-results.json");
      return exitCode;
    }
    // the metered servers run without logs or metrics, and one beside them with both (an access
    // line per request on a pipe the bench drains), so their cost is measured side by side
    const started = await Promise.allSettled([
      startServer("real", settings.serverEntry, { ...env, METRICS: "off" }, { retryForMs, log }),
      startServer("baseline", "scripts/bench-baseline.ts", env, { retryForMs, log }),
      startServer("observed", settings.serverEntry, { ...env, LOG_LEVEL: "info", METRICS: "on" }, { retryForMs, log }),
      ...(settings.beforeEntry ? [startServer("before", settings.beforeEntry, env, { retryForMs, log })] : []),
    ]);
    for (const s of started) if (s.status === "fulfilled") servers.push(s.value);
    for (const s of started) if (s.status === "rejected") throw s.reason;
    const [real, baseline, observed, before] = servers;

    const problems = await checkSameAnswers(real.url, baseline.url, apiKey, settings.wallets);
    if (problems.some((p) => p.includes(" answered "))) throw new Error(`Cannot run the bench: ${problems.join("\n")}`);
    for (const p of problems) log(`WARNING: ${p}`);

    const moreKeys = settings.accounts > 1 ? await createMoreBenchKeys(db, settings.accounts - 1, new Date()) : [];
    const cases = benchCases({ real: real.url, baseline: baseline.url, observed: observed.url, before: before?.url }, apiKey, settings.wallets, moreKeys);
    const pidOf = new Map(servers.map((s) => [s.url, s.pid]));
    const total = cases.length * (settings.warmupSeconds + settings.rounds * settings.durationSeconds);
    log(
      `Driving ${settings.connections} connections: ${settings.warmupSeconds} s warm-up, then ${settings.rounds} rounds of ` +
        `${settings.durationSeconds} s per case (about ${Math.ceil(total / 60)} min).`,
    );
    if (settings.warmupSeconds > 0) {
      for (const c of cases) await runLoad(c, settings.warmupSeconds, settings.connections);
    }
    const runs = new Map<CaseId, RunFigures[]>(cases.map((c) => [c.id, []]));
    for (let round = 1; round <= settings.rounds; round++) {
      // alternate the order so no case always runs right after the same neighbour
      const order = round % 2 === 1 ? cases : [...cases].reverse();
      for (const c of order) {
        const figures = await runLoad(c, settings.durationSeconds, settings.connections, { db, serverPid: pidOf.get(c.url)! });
        runs.get(c.id)!.push(figures);
        const cpuLine = figures.serverUsPerRequest === undefined ? "" : `  CPU µs/req server ${figures.serverUsPerRequest.toFixed(0)} pg ${figures.pgUsPerRequest!.toFixed(0)}`;
        log(`  round ${round}  ${c.label.padEnd(44)} ${figures.rps.toFixed(0).padStart(6)} req/s  p50 ${figures.p50Ms} ms  p99 ${figures.p99Ms} ms${cpuLine}`);
      }
    }

    const reverse = settings.case === "all" ? await reverseCase(real.url) : undefined;
    const mcp = settings.case === "all" ? await mcpCase(real.url) : undefined;

    for (const s of servers) if (s.failure()) throw new Error(s.failure());
    await stopAll();
    const metering = await readMetering(db, accountId);

    const reports = cases.map((c) => summarize(c, runs.get(c.id)!));
    const byId = Object.fromEntries(cases.map((c, i) => [c.id, reports[i]])) as Record<CaseId, CaseReport>;
    const ratio = byId.metered.rps / byId.baseline.rps;

    console.log("");
    printTable(reports);
    console.log("");
    console.log(`metered single / baseline single: ${ratio.toFixed(2)} (target >= ${RATIO_TARGET})${ratio < RATIO_TARGET ? "  BELOW TARGET" : ""}`);
    const observedRatio = byId["metered-observed"].rps / byId.metered.rps;
    console.log(
      `access log and metrics on / off (metered GET /wallet): ${observedRatio.toFixed(2)}, a cost of ${((1 - observedRatio) * 100).toFixed(1)}% ` +
        `(target at most 5%; by round: ${byId["metered-observed"].rounds.map((r, i) => (r.rps / byId.metered.rounds[i].rps).toFixed(2)).join(", ")})`,
    );
    if (byId["metered-accounts"]) {
      const spread = byId["metered-accounts"].rps / byId.metered.rps;
      console.log(`${byId["metered-accounts"].label} / one account: ${spread.toFixed(2)} (target >= 0.9)`);
    }
    for (const id of ["metered", "batch", "metered-accounts"] as const) {
      const earlier = byId[`${id}-before`];
      if (earlier) console.log(`${byId[id].label} / the same before: ${(byId[id].rps / earlier.rps).toFixed(2)} (median req/s ${byId[id].rps.toFixed(0)} vs ${earlier.rps.toFixed(0)})`);
    }
    console.log(
      `metering over the whole run: ${metering.usageEvents} requests in usage, ${metering.rateUnits} rate units counted, ` +
        `${metering.matchesDebited} matches debited over ${metering.debitCalls} calls`,
    );
    for (const r of reports) {
      if (r.non2xx + r.errors + r.timeouts > 0) {
        const codes = r.rounds.map((x) => JSON.stringify(x.statusCodes)).join(" ");
        log(`WARNING: ${r.label}: ${r.non2xx} non-2xx responses, ${r.errors} errors, ${r.timeouts} timeouts (status codes by round: ${codes})`);
      }
    }

    const job = settings.case === "all" ? await jobCase() : undefined;
    const purchase = settings.case === "all" ? await purchaseCase() : undefined;

    const results = {
      job,
      purchase,
      finishedAt: new Date().toISOString(),
      machine: { cpus: availableParallelism(), node: process.version },
      settings: { ...settings, batchSize: BATCH_SIZE },
      index: { database: BENCH_DATABASE, loadSeconds: index.loadMs === null ? null : index.loadMs / 1000, counts: index.counts },
      cases: byId,
      reverse,
      mcp,
      ratio: { meteredSingleOverBaseline: ratio, target: RATIO_TARGET, observedOverMetered: observedRatio },
      metering,
    };
    mkdirSync(join(ROOT, ".bench"), { recursive: true });
    writeFileSync(join(ROOT, ".bench", "results.json"), `${JSON.stringify(results, null, 2)}\n`);
    log(`Wrote .bench/results.json`);
  } catch (err) {
    console.error((err as Error).message);
    exitCode = 1;
  } finally {
    await stopAll();
    await db.close();
  }
  return exitCode;
}

main().then(
  (code) => process.exit(code),
  (err: Error) => {
    console.error(err.message.startsWith("Cannot") ? err.message : `Cannot run the bench: ${err.stack ?? err.message}`);
    process.exit(1);
  },
);
