// npm run bench: every case of the service side by side in one run, over a generated PostgreSQL
// index of 1,000,000 wallets: a bare hono + postgres.js select by primary key (the reference),
// the project's baseline (bench/baseline-server.ts), metered lookups (single, batches of 50 and
// 200, one account and 100), reverse paging (1 and 8 clients), the access log and metrics on
// against off, then the MCP case, the job and the x402 purchase. Each HTTP case reports req/s,
// latency and the CPU time per request of its server process and of PostgreSQL (from /proc),
// which is steadier than req/s on a shared machine; the run ends with the ratios and the
// acceptance targets, each marked met or missed. docs/performance.md explains the method and
// keeps the figures. Over 450 lines: the one entry that reads every option and starts every case.
//
//   npm run bench -- [--case all|lookup|reverse|mcp|job|purchase|percall|hub|scale|events] [--duration 10] [--warmup 3]
//                    [--rounds 2] [--connections 32] [--reverse-clients 8] [--wallets 1000000]
//                    [--rebuild] [--server-wait 10] [--server-entry src/main.ts] [--job-size 100000]
//                    [--purchase-clients 8] [--before-entry PATH] [--base-wallets 1000000]
//                    [--opted-out 0%]
//
// --case runs one group: lookup (bench/lookup.ts, in rounds), reverse (bench/reverse.ts, in
// rounds), mcp (bench/mcp.ts), job (bench/job.ts), purchase (bench/purchase.ts); the default runs
// them all; scale (bench/scale.ts) runs only when named: the bench index beside one of --wallets
// (say 10000000) in the database BENCH_SCALE_DATABASE (default BENCH_DATABASE_<wallets>). So does
// percall (bench/percall.ts: single lookups paid per call over x402 against key-metered ones, on
// one server), and hub (bench/hub.ts; --hub-fids 100000 --hub-events 10000 --hub-concurrency 32,
// --duration the seconds of its latency phase), alone on a database of its own, and events
// (bench/events.ts; --events-lines 100000 --events-watched 10000, --events-per-endpoint N, --rounds default 3), likewise.
// The rounds are bench/rounds.ts.
// --before-entry starts a second metered server from another checkout's entry (for example the
// previous commit's src/main.ts on the same database) and drives its metered cases in the same
// rounds as this one's, so a change is measured side by side under the same load.
// --server-wait: minutes to keep retrying a server entry that fails on a module not written yet.
// Figures go to stdout and .bench/results.json (.bench/<group>-results.json for one group other
// than lookup). Exits 1 when a server fails to start or dies.
import { mkdirSync, writeFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { parseArgs } from "node:util";
import { createBenchAccounts, readMetering } from "./accounts.ts";
import { CROWD_HANDLE, prepareIndex } from "./generated-index.ts";
import { printJobReport, runJobCase } from "./job.ts";
import {
  BATCH_SIZE,
  checkSameAnswers,
  LARGE_BATCH_SIZE,
  lookupCases,
  randomWallet,
  SPREAD_ACCOUNTS,
  startLoggingServers,
  type LoggingServer,
} from "./lookup.ts";
import { benchMcp, printMcpReport } from "./mcp.ts";
import { printPurchaseReport, runPurchaseCase } from "./purchase.ts";
import { printPercallReport, runPercallCase } from "./percall.ts";
import { checkTargets, formatRatio, printCaseTable, printTargets, ratioOf, type CaseSummary } from "./report.ts";
import { checkReverse, reverseCases } from "./reverse.ts";
import { runRounds, type BenchCase, type CaseId } from "./rounds.ts";
import { runScaleCase } from "./scale.ts";
import { printHubReport, runHubCase } from "./hub.ts";
import { printEventsReport, runEventsCase } from "./events.ts";
import { ROOT, startServer, type ChildServer } from "./servers.ts";
import { parseOptedOut, setOptedOut } from "./opted-out.ts";

const SERVER_URL = "postgres://postgres@127.0.0.1:5432";
const BENCH_DATABASE = process.env.BENCH_DATABASE ?? "walletid_bench";

const GROUPS = ["lookup", "reverse", "mcp", "job", "purchase", "percall", "hub"] as const;
type Group = (typeof GROUPS)[number];
/** Cases `--case all` leaves out: scale builds and measures a second, larger index. */
const APART = ["scale", "events"] as const;

interface Settings {
  durationSeconds: number;
  warmupSeconds: number;
  rounds: number;
  /** --rounds was given (the events case defaults to 3, the others to 2). */
  roundsGiven: boolean;
  connections: number;
  wallets: number;
  /** The smaller index of --case scale. */
  baseWallets: number;
  rebuild: boolean;
  serverWaitMinutes: number;
  serverEntry: string;
  reverseClients: number;
  case: "all" | Group | (typeof APART)[number];
  jobSize: number;
  beforeEntry: string | undefined;
  purchaseClients: number;
  /** The fraction of the index on the opt-out list while the cases run (--opted-out 1% is 0.01). */
  optedOut: number;
  hubFids: number;
  hubEvents: number;
  hubConcurrency: number;
  eventsLines: number;
  eventsWatched: number;
  /** The delivery loop's per-endpoint limit in the events case (the loop's default when absent). */
  eventsPerEndpoint: number | undefined;
}

function readSettings(argv: string[]): Settings {
  const { values } = parseArgs({
    args: argv,
    options: {
      duration: { type: "string", default: "10" },
      warmup: { type: "string", default: "3" },
      rounds: { type: "string" },
      connections: { type: "string", default: "32" },
      wallets: { type: "string", default: "1000000" },
      "base-wallets": { type: "string", default: "1000000" },
      rebuild: { type: "boolean", default: false },
      "server-wait": { type: "string", default: "10" },
      "server-entry": { type: "string", default: "src/main.ts" },
      "reverse-clients": { type: "string", default: "8" },
      case: { type: "string", default: "all" },
      "job-size": { type: "string", default: "100000" },
      "before-entry": { type: "string" },
      "purchase-clients": { type: "string", default: "8" },
      "opted-out": { type: "string", default: "0%" },
      "hub-fids": { type: "string", default: "100000" },
      "hub-events": { type: "string", default: "10000" },
      "hub-concurrency": { type: "string", default: "32" },
      "events-lines": { type: "string", default: "100000" },
      "events-watched": { type: "string", default: "10000" },
      "events-per-endpoint": { type: "string" },
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
    rounds: whole("rounds", values.rounds ?? "2", 1),
    roundsGiven: values.rounds !== undefined,
    connections: whole("connections", values.connections, 1),
    wallets: whole("wallets", values.wallets, 1000),
    baseWallets: whole("base-wallets", values["base-wallets"], 1000),
    rebuild: values.rebuild,
    serverWaitMinutes: whole("server-wait", values["server-wait"], 0),
    serverEntry: values["server-entry"],
    reverseClients: whole("reverse-clients", values["reverse-clients"], 1),
    case: (["all", ...GROUPS, ...APART] as const).find((c) => c === values.case) ?? failCase(values.case),
    jobSize: whole("job-size", values["job-size"], 20),
    beforeEntry: values["before-entry"],
    purchaseClients: whole("purchase-clients", values["purchase-clients"], 1),
    optedOut: parseOptedOut(values["opted-out"]),
    hubFids: whole("hub-fids", values["hub-fids"], 10),
    hubEvents: whole("hub-events", values["hub-events"], 10),
    hubConcurrency: whole("hub-concurrency", values["hub-concurrency"], 1),
    eventsLines: whole("events-lines", values["events-lines"], 10),
    eventsWatched: whole("events-watched", values["events-watched"], 1),
    eventsPerEndpoint: values["events-per-endpoint"] === undefined ? undefined : whole("events-per-endpoint", values["events-per-endpoint"], 1),
  };
}

function failCase(value: string): never {
  throw new Error(`Cannot run the bench: --case must be all, ${[...GROUPS, ...APART].join(", ")}, not ${JSON.stringify(value)}`);
}

// ---- main ---------------------------------------------------------------------------------

const RESULTS_FILE: Record<Settings["case"], string> = {
  all: "results.json",
  lookup: "results.json",
  reverse: "reverse-results.json",
  mcp: "mcp-results.json",
  job: "job-results.json",
  purchase: "purchase-results.json",
  scale: "scale-results.json",
  percall: "percall-results.json",
  hub: "hub-results.json",
  events: "events-results.json",
};

async function main(): Promise<number> {
  const settings = readSettings(process.argv.slice(2));
  const startedAt = performance.now();
  const log = (line: string) => console.log(line);
  if (settings.case === "scale") return await scale(settings, log, startedAt);
  // the hub case fills a database of its own from a fake hub: it needs no generated index
  if (settings.case === "hub") return await hubOnly(settings, log);
  // so does the events case (imports into an empty index, and a local webhook receiver)
  if (settings.case === "events") return await eventsOnly(settings, log);
  // percall only when asked for: it adds minutes of paid calls to a full run
  const runs = (group: Group) => settings.case === group || (settings.case === "all" && group !== "percall");

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
  const optedOut = await setOptedOut(db, { wallets: settings.wallets, fraction: settings.optedOut });
  log(`Opted out: ${optedOut} wallets (--opted-out ${settings.optedOut * 100}%).`);

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
    // its own (bench/lookup.ts), each serving the app with both (an access line per request, to
    // its log file under .bench/) and without, measured side by side; they start beside the others
    const loggingStarted = Promise.allSettled([runs("lookup") ? startLoggingServers(start, env) : []]);
    const started = await Promise.allSettled([
      ...(runs("lookup") || runs("reverse") || runs("mcp") ? [start("real", settings.serverEntry, { ...env, METRICS: "off" })] : []),
      ...(runs("lookup")
        ? [
            start("bare", "bench/bare-server.ts", env),
            start("baseline", "bench/baseline-server.ts", env),
            ...(settings.beforeEntry ? [start("before", settings.beforeEntry, env)] : []),
          ]
        : []),
    ]);
    const [loggingOutcome] = await loggingStarted;
    for (const s of started) if (s.status === "fulfilled") servers.push(s.value);
    const logging: LoggingServer[] = loggingOutcome.status === "fulfilled" ? loggingOutcome.value : [];
    servers.push(...logging.map((l) => l.observed));
    for (const s of [...started, loggingOutcome]) if (s.status === "rejected") throw s.reason;
    const byName = (name: string) => servers.find((s) => s.name === name);
    const real = byName("real");

    const cases: BenchCase[] = [];
    if (runs("lookup")) {
      const [bare, baseline] = [byName("bare")!, byName("baseline")!];
      const problems = await checkSameAnswers({ real: real!.url, baseline: baseline.url, bare: bare.url }, keys, settings.wallets);
      if (problems.some((p) => p.includes(" answered "))) throw new Error(`Cannot run the bench: ${problems.join("\n")}`);
      for (const p of problems) log(`WARNING: ${p}`);
      cases.push(...lookupCases({ bare, baseline, real: real!, logging, before: byName("before") }, keys, settings));
    }
    if (runs("reverse")) {
      const holders = await checkReverse({ url: real!.url, apiKey: keys.single, handle: CROWD_HANDLE });
      log(`Reverse check: ${holders} holders of ${CROWD_HANDLE}, each once and in order; the reverse cases page them all, again and again.`);
      cases.push(...reverseCases(real!, keys.single, CROWD_HANDLE, settings.reverseClients));
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

    const percall = await attempt("percall", () =>
      runPercallCase({
        db,
        databaseUrl: index.databaseUrl,
        serverEntry: settings.serverEntry,
        apiKey: first.apiKey,
        wallets: settings.wallets,
        clients: settings.purchaseClients,
        seconds: settings.durationSeconds,
        rounds: settings.rounds,
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
    if (percall) {
      log("");
      printPercallReport(percall, log);
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
      percall,
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

/** --case scale (bench/scale.ts): the bench index beside one of --wallets, in a database of its own. */
async function scale(settings: Settings, log: (line: string) => void, startedAt: number): Promise<number> {
  const largeDatabase = process.env.BENCH_SCALE_DATABASE ?? `${BENCH_DATABASE}_${settings.wallets}`;
  log(`Scale: ${BENCH_DATABASE} (${settings.baseWallets.toLocaleString("en-US")} wallets) beside ${largeDatabase} (${settings.wallets.toLocaleString("en-US")}).`);
  const retryForMs = settings.serverWaitMinutes * 60_000;
  const { ok, reports } = await runScaleCase(
    { ...settings, serverUrl: SERVER_URL, adminDatabase: "test", baseDatabase: BENCH_DATABASE, largeDatabase },
    (name, entry, env) => startServer(name, entry, env, { retryForMs, log }),
    log,
  );
  mkdirSync(join(ROOT, ".bench"), { recursive: true });
  const results = { finishedAt: new Date().toISOString(), machine: { cpus: availableParallelism(), node: process.version }, settings, reports };
  writeFileSync(join(ROOT, ".bench", RESULTS_FILE.scale), `${JSON.stringify(results, null, 2)}\n`);
  const seconds = Math.round((performance.now() - startedAt) / 1000);
  log(`Wrote .bench/${RESULTS_FILE.scale} (the run took ${Math.floor(seconds / 60)} min ${seconds % 60} s)`);
  return ok ? 0 : 1;
}

/** --case hub: the hub case alone, on its own database (BENCH_DATABASE + _hub); exits 1 when a target is missed. */
async function hubOnly(settings: Settings, log: (line: string) => void): Promise<number> {
  const startedAt = performance.now();
  log(`Hub case: ${availableParallelism()} CPUs, Node ${process.version}; the fake hub runs in this process and shares the machine.`);
  const hub = await runHubCase({
    serverUrl: SERVER_URL,
    database: BENCH_DATABASE,
    fids: settings.hubFids,
    events: settings.hubEvents,
    concurrency: settings.hubConcurrency,
    latencySeconds: settings.durationSeconds,
    log,
  });
  printHubReport(hub, log);
  mkdirSync(join(ROOT, ".bench"), { recursive: true });
  const results = { finishedAt: new Date().toISOString(), machine: { cpus: availableParallelism(), node: process.version }, settings, hub };
  writeFileSync(join(ROOT, ".bench", RESULTS_FILE.hub), `${JSON.stringify(results, null, 2)}\n`);
  const seconds = Math.round((performance.now() - startedAt) / 1000);
  log(`Wrote .bench/${RESULTS_FILE.hub} (the run took ${Math.floor(seconds / 60)} min ${seconds % 60} s)`);
  return hub.targets.every((t) => t.met) ? 0 : 1;
}

/** --case events: the events case alone, on its own database (BENCH_DATABASE + _events); exits 1 when a target is missed. */
async function eventsOnly(settings: Settings, log: (line: string) => void): Promise<number> {
  const startedAt = performance.now();
  log(`Events case: ${availableParallelism()} CPUs, Node ${process.version}; the imports, the delivery loop and the receiver share this process.`);
  const events = await runEventsCase({
    serverUrl: SERVER_URL,
    database: BENCH_DATABASE,
    rounds: settings.roundsGiven ? settings.rounds : 3,
    lines: settings.eventsLines,
    watched: settings.eventsWatched,
    perEndpoint: settings.eventsPerEndpoint,
    log,
  });
  printEventsReport(events, log);
  mkdirSync(join(ROOT, ".bench"), { recursive: true });
  const results = { finishedAt: new Date().toISOString(), machine: { cpus: availableParallelism(), node: process.version }, settings, events };
  writeFileSync(join(ROOT, ".bench", RESULTS_FILE.events), `${JSON.stringify(results, null, 2)}\n`);
  const seconds = Math.round((performance.now() - startedAt) / 1000);
  log(`Wrote .bench/${RESULTS_FILE.events} (the run took ${Math.floor(seconds / 60)} min ${seconds % 60} s)`);
  return events.targets.every((t) => t.met) ? 0 : 1;
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
