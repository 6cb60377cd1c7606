// npm run bench -- --case scale --wallets 10000000: the costs that grow with the index, side by
// side on the 1,000,000-wallet bench index and a generated one of --wallets (the same shapes):
// import observations/s, bytes on disk per wallet, metered lookups (req/s, CPU a request), a
// batch of 200 alone, reverse pages of a handle held by 10,000 wallets at 1 and 8 clients, an
// estimate of 100,000 addresses, the job of 100,000; then EXPLAIN (ANALYZE, BUFFERS) of the
// statements behind them on both. The HTTP cases share the rounds (bench/rounds.ts), one server
// per index, so the machine's other load falls on both sizes alike.
import { randomBytes } from "node:crypto";
import { sql } from "../src/db/queries.ts";
import type { Db } from "../src/db/types.ts";
import { importObservations } from "../src/index/import.ts";
import { createBenchAccounts } from "./accounts.ts";
import { benchAddress, CROWD_HANDLE, prepareIndex, type PreparedIndex } from "./generated-index.ts";
import { printJobReport, runJobCase, type JobCaseReport } from "./job.ts";
import { autocannonDrive, LARGE_BATCH_SIZE, randomWallet } from "./lookup.ts";
import { cpuPerRequest, type CaseSummary } from "./report.ts";
import { checkReverse, reverseCases } from "./reverse.ts";
import { runRounds, type BenchCase } from "./rounds.ts";
import type { ChildServer } from "./servers.ts";

/** Wallets imported (new ones, in the generated shapes) to time the import; removed afterwards. */
const IMPORT_WALLETS = 100_000;
/** Addresses estimated, in calls of ESTIMATE_LIST (the bench plan's batch size). */
const ESTIMATE_ADDRESSES = 100_000;
const ESTIMATE_LIST = 1_000;
/** The tables of the index: their size with indexes and TOAST, over the wallets, is bytes per wallet. */
const INDEX_TABLES = ["wallets", "links", "farcaster_accounts", "twitter_reachability", "reverse_entries", "reverse_counts"];

type StartServer = (name: string, entry: string, env: Record<string, string>) => Promise<ChildServer>;

export interface ScaleSettings {
  serverUrl: string;
  adminDatabase: string;
  baseDatabase: string;
  largeDatabase: string;
  /** The larger index, and the reference (the bench index's 1,000,000 unless told otherwise). */
  wallets: number;
  baseWallets: number;
  rebuild: boolean;
  durationSeconds: number;
  warmupSeconds: number;
  rounds: number;
  connections: number;
  reverseClients: number;
  jobSize: number;
  serverEntry: string;
}

export interface SizeReport {
  label: string;
  wallets: number;
  database: string;
  loadSeconds: number | null;
  counts: PreparedIndex["counts"];
  disk: { bytes: number; perWallet: number; relations: Array<{ name: string; bytes: number }> };
  importFigures: { observations: number; seconds: number; perSecond: number };
  estimate: { addresses: number; calls: number; seconds: number; p50Ms: number; p99Ms: number };
  cases: Record<string, CaseSummary>;
  job: JobCaseReport | null;
  plans: Array<{ name: string; ms: number; hit: number; read: number; text: string }>;
}

/** Thousands separators, `d` decimals. */
const n = (x: number, d = 0) => x.toLocaleString("en-US", { maximumFractionDigits: d, minimumFractionDigits: d });
const label = (wallets: number) => (wallets % 1_000_000 === 0 ? `${wallets / 1_000_000}M` : n(wallets));

/** Bytes of each index table with its indexes and TOAST, and per wallet over them all. */
async function diskFigures(db: Db, wallets: number): Promise<SizeReport["disk"]> {
  const rows = await db.query<{ name: string; bytes: string }>(
    "SELECT t AS name, pg_total_relation_size(t::regclass) AS bytes FROM unnest($1::text[]) AS t",
    [INDEX_TABLES],
  );
  const indexes = await db.query<{ name: string; bytes: string }>(
    `SELECT i.indexrelid::regclass::text AS name, pg_relation_size(i.indexrelid) AS bytes
       FROM pg_index i WHERE i.indrelid = ANY (SELECT t::regclass FROM unnest($1::text[]) AS t)
      ORDER BY 2 DESC`,
    [INDEX_TABLES],
  );
  const relations = [...rows, ...indexes.map((i) => ({ name: `  index ${i.name}`, bytes: i.bytes }))].map((r) => ({ name: r.name, bytes: Number(r.bytes) }));
  const bytes = rows.reduce((sum, r) => sum + Number(r.bytes), 0);
  return { bytes, perWallet: bytes / wallets, relations };
}

/** The NDJSON lines of generated-shape observations for wallets `from` to `from + count - 1`. */
function importLines(from: number, count: number): string[] {
  const lines: string[] = [];
  const at = new Date(Date.now() - 86_400_000).toISOString();
  for (let i = from; i < from + count; i++) {
    const wallet = benchAddress(i);
    const kinds = [["twitter"], ["farcaster"], ["ens"], ["twitter", "farcaster"], ["twitter", "ens"], ["lens"], ["github"], ["farcaster", "ens"]][i % 8];
    for (const kind of kinds) {
      const base = { wallet, kind, observed_at: at };
      if (kind === "twitter") lines.push(JSON.stringify({ ...base, route: "x-signin", handle: `user${i}` }));
      if (kind === "farcaster") lines.push(JSON.stringify({ ...base, route: "farcaster-verification", fid: i, username: `caster${i}`, followers: i % 5000 }));
      if (kind === "ens") lines.push(JSON.stringify({ ...base, route: "ens-primary", name: `wallet${i}.eth` }));
      if (kind === "lens") lines.push(JSON.stringify({ ...base, route: "lens-profile", handle: `wallet${i}.lens` }));
      if (kind === "github") lines.push(JSON.stringify({ ...base, route: "github-signin", username: `dev${i}` }));
    }
    if (i % 2 === 0 && kinds.includes("twitter")) {
      lines.push(JSON.stringify({ kind: "reachability", handle: `user${i}`, reachability: "live", checked_at: at }));
    }
  }
  return lines;
}

/**
 * Imports IMPORT_WALLETS new wallets' observations through the import the admin CLI runs (one
 * transaction, all triggers), timed; then removes them, so the index stays as generated.
 */
async function timeImport(db: Db, wallets: number): Promise<SizeReport["importFigures"]> {
  const from = wallets + 1;
  const lines = importLines(from, IMPORT_WALLETS);
  const addresses = Array.from({ length: IMPORT_WALLETS }, (_, k) => benchAddress(from + k));
  const t0 = performance.now();
  const counts = await importObservations(db, lines, { now: new Date() });
  const seconds = (performance.now() - t0) / 1000;
  if (counts.wallets_added !== IMPORT_WALLETS) throw new Error(`Cannot time the import: it added ${counts.wallets_added} wallets, not ${IMPORT_WALLETS}`);
  await db.transaction(async (tx) => {
    await tx.query("DELETE FROM links WHERE wallet = ANY($1::text[])", [addresses]);
    await tx.query("DELETE FROM wallets WHERE address = ANY($1::text[])", [addresses]);
    await tx.query("DELETE FROM farcaster_accounts WHERE fid >= $1 AND fid < $2", [from, from + IMPORT_WALLETS]);
    await tx.query("DELETE FROM twitter_reachability WHERE handle = ANY($1::text[])", [addresses.map((_, k) => `user${from + k}`)]);
  }, { bulk: true });
  await db.exec("VACUUM (ANALYZE) links, wallets, farcaster_accounts, twitter_reachability, reverse_entries, reverse_counts");
  return { observations: lines.length, seconds, perSecond: lines.length / seconds };
}

/** ESTIMATE_ADDRESSES addresses (half in the index) estimated in calls of ESTIMATE_LIST, one after another. */
async function timeEstimate(url: string, apiKey: string, wallets: number): Promise<SizeReport["estimate"]> {
  const latencies: number[] = [];
  const t0 = performance.now();
  for (let done = 0; done < ESTIMATE_ADDRESSES; done += ESTIMATE_LIST) {
    const list = Array.from({ length: ESTIMATE_LIST }, (_, k) =>
      k % 2 === 0 ? benchAddress(1 + Math.floor(Math.random() * wallets)) : `0x${randomBytes(20).toString("hex")}`,
    );
    const t = performance.now();
    const res = await fetch(`${url}/api/v1/estimate`, {
      method: "POST",
      headers: { Authorization: `Bearer ${apiKey}`, "Content-Type": "application/json" },
      body: JSON.stringify({ wallets: list }),
    });
    const text = await res.text();
    if (res.status !== 200) throw new Error(`POST /estimate answered ${res.status}: ${text.slice(0, 300)}`);
    latencies.push(performance.now() - t);
  }
  const seconds = (performance.now() - t0) / 1000;
  latencies.sort((a, b) => a - b);
  const at = (p: number) => latencies[Math.min(latencies.length - 1, Math.ceil(p * latencies.length) - 1)];
  return { addresses: ESTIMATE_ADDRESSES, calls: latencies.length, seconds, p50Ms: at(0.5), p99Ms: at(0.99) };
}

/** EXPLAIN (ANALYZE, BUFFERS) of what a lookup, a batch of 200 and a reverse page read. */
async function explainPlans(db: Db, wallets: number, apiKeyHash: string | null): Promise<SizeReport["plans"]> {
  const identityRows = (await db.query<{ body: string }>("SELECT prosrc AS body FROM pg_proc WHERE proname = 'identity_rows'"))[0].body;
  const pick = (count: number) => Array.from({ length: count }, (_, k) => (k % 2 === 0 ? benchAddress(1 + Math.floor(Math.random() * wallets)) : `0x${randomBytes(20).toString("hex")}`));
  const [middle] = await db.query<{ rank: number; wallet: string }>(
    "SELECT rank, wallet FROM reverse_entries WHERE kind = 'twitter' AND key = $1 ORDER BY rank, wallet OFFSET 5000 LIMIT 1",
    [CROWD_HANDLE],
  );
  const page = sql("reverse_entries_select_page");
  const statements: Array<[string, string, unknown[]]> = [
    ["identity rows of 1 wallet (lookup)", identityRows.replaceAll("p_addresses", "$1::text[]"), [pick(1)]],
    ["identity rows of 200 wallets (batch)", identityRows.replaceAll("p_addresses", "$1::text[]"), [pick(200)]],
    ["reverse page 51 of 100", page, ["twitter", CROWD_HANDLE, middle.rank, middle.wallet, 101, apiKeyHash ?? ""]],
  ];
  const plans: SizeReport["plans"] = [];
  for (const [name, text, params] of statements) {
    // twice: the first run pays for cold pages, the second is what a warm server meets
    await db.query(`EXPLAIN (ANALYZE, BUFFERS) ${text}`, params);
    const rows = await db.query<{ "QUERY PLAN": string }>(`EXPLAIN (ANALYZE, BUFFERS) ${text}`, params);
    const lines = rows.map((r) => r["QUERY PLAN"]);
    const all = lines.join("\n");
    const ms = Number(/Execution Time: ([\d.]+) ms/.exec(all)?.[1] ?? NaN);
    const top = lines.find((l) => /Buffers:/.test(l)) ?? "";
    plans.push({
      name,
      ms,
      hit: Number(/shared hit=(\d+)/.exec(top)?.[1] ?? 0),
      read: Number(/read=(\d+)/.exec(top)?.[1] ?? 0),
      text: all,
    });
  }
  return plans;
}

/** The scale case: the figures of both sizes, and whether every part ran. */
export async function runScaleCase(
  settings: ScaleSettings,
  startServer: StartServer,
  log: (line: string) => void,
): Promise<{ ok: boolean; reports: SizeReport[] }> {
  if (settings.wallets <= settings.baseWallets) throw new Error(`Cannot run the scale case: --wallets must be above ${n(settings.baseWallets)}`);
  const sizes = [
    { wallets: settings.baseWallets, database: settings.baseDatabase },
    { wallets: settings.wallets, database: settings.largeDatabase },
  ];
  const indexes: PreparedIndex[] = [];
  const servers: ChildServer[] = [];
  try {
    for (const size of sizes) {
      const index = await prepareIndex({ serverUrl: settings.serverUrl, adminDatabase: settings.adminDatabase, ...size, rebuild: settings.rebuild, log });
      indexes.push(index);
      if (index.loadMs !== null) log(`Loaded ${n(size.wallets)} wallets in ${n(index.loadMs / 1000, 1)} s (including VACUUM ANALYZE).`);
    }
    const reports: SizeReport[] = [];
    for (const [i, size] of sizes.entries()) {
      const index = indexes[i];
      reports.push({
        label: label(size.wallets),
        wallets: size.wallets,
        database: size.database,
        loadSeconds: index.loadMs === null ? null : index.loadMs / 1000,
        counts: index.counts,
        disk: await diskFigures(index.db, size.wallets),
        importFigures: { observations: 0, seconds: 0, perSecond: 0 },
        estimate: { addresses: 0, calls: 0, seconds: 0, p50Ms: 0, p99Ms: 0 },
        cases: {},
        job: null,
        plans: [],
      });
    }

    // the HTTP cases of both sizes in the same rounds, one metered server per index
    const accounts = await Promise.all(indexes.map(async (index) => (await createBenchAccounts(index.db, 1, new Date()))[0]));
    for (const [i, index] of indexes.entries()) {
      servers.push(await startServer(`real-${reports[i].label}`, settings.serverEntry, { DATABASE_URL: index.databaseUrl, WORKER: "0", METRICS: "off" }));
    }
    const cases: BenchCase[] = [];
    for (const [i, index] of indexes.entries()) {
      const [server, key, r] = [servers[i], accounts[i].apiKey, reports[i]];
      const holders = await checkReverse({ url: server.url, apiKey: key, handle: CROWD_HANDLE });
      log(`Reverse check on ${r.label}: ${n(holders)} holders of ${CROWD_HANDLE}, each once and in order.`);
      const auth = { Authorization: `Bearer ${key}` };
      const sized = (c: BenchCase): BenchCase => ({ ...c, id: `${c.id}@${r.label}`, label: `${c.label}, ${r.label}`, db: index.db });
      cases.push(
        sized({
          id: "metered",
          label: "metered GET /wallet, 1 account",
          server,
          connections: settings.connections,
          walletsPerRequest: 1,
          drive: autocannonDrive(server.url, settings.connections, {
            method: "GET",
            headers: auth,
            setupRequest: (req) => ({ ...req, path: `/api/v1/wallet/${randomWallet(r.wallets)}` }),
          }),
        }),
        sized({
          id: "batch-200-alone",
          label: `metered POST /batch of ${LARGE_BATCH_SIZE}, alone`,
          server,
          connections: 1,
          walletsPerRequest: LARGE_BATCH_SIZE,
          drive: autocannonDrive(server.url, 1, {
            method: "POST",
            path: "/api/v1/batch",
            headers: { ...auth, "Content-Type": "application/json" },
            setupRequest: (req) => ({ ...req, body: JSON.stringify({ wallets: Array.from({ length: LARGE_BATCH_SIZE }, () => randomWallet(r.wallets)) }) }),
          }),
        }),
        ...reverseCases(server, key, CROWD_HANDLE, settings.reverseClients).map(sized),
      );
    }
    // the rounds' own database handle only names a default: every case here carries its index's
    const summaries = await runRounds(indexes[0].db, cases, settings, log);
    for (const s of summaries) reports.find((r) => s.id.endsWith(`@${r.label}`))!.cases[s.id.split("@")[0]] = s;

    for (const [i, r] of reports.entries()) {
      log(`Estimating ${n(ESTIMATE_ADDRESSES)} addresses on ${r.label} ...`);
      r.estimate = await timeEstimate(servers[i].url, accounts[i].apiKey, r.wallets);
    }
    await Promise.all(servers.map((s) => s.stop()));
    for (const s of servers) if (s.failure()) throw new Error(s.failure());

    for (const [i, r] of reports.entries()) {
      log(`Importing ${n(IMPORT_WALLETS)} new wallets' observations into ${r.label} ...`);
      r.importFigures = await timeImport(indexes[i].db, r.wallets);
      const [hash] = await indexes[i].db.query<{ key_hash: string }>("SELECT key_hash FROM api_keys LIMIT 1");
      r.plans = await explainPlans(indexes[i].db, r.wallets, hash?.key_hash ?? null);
    }
    for (const [i, r] of reports.entries()) {
      log("");
      log(`The job on ${r.label}:`);
      try {
        r.job = await runJobCase({
          db: indexes[i].db,
          databaseUrl: indexes[i].databaseUrl,
          apiKey: accounts[i].apiKey,
          accountId: accounts[i].accountId,
          size: settings.jobSize,
          serverEntry: settings.serverEntry,
          startServer,
          log,
        });
        printJobReport(r.job, log);
      } catch (err) {
        log(`The job case on ${r.label} failed: ${(err as Error).message}`);
      }
    }
    printScaleReport(reports, settings, log);
    return { ok: reports.every((r) => r.job !== null), reports };
  } finally {
    await Promise.all(servers.map((s) => s.stop()));
    await Promise.all(indexes.map((i) => i.db.close()));
  }
}

/** The two sizes side by side, the ratios and the targets at the larger size, then the plans. */
function printScaleReport(reports: SizeReport[], settings: ScaleSettings, log: (line: string) => void): void {
  const [base, large] = reports;
  const row = (name: string, f: (r: SizeReport) => number | null, format: (x: number) => string, target?: (b: number, l: number) => string) => {
    const [b, l] = [f(base), f(large)];
    const cells = [b, l].map((x) => (x === null || Number.isNaN(x) ? "-" : format(x)));
    const ratio = b && l ? (l / b).toFixed(2) : "-";
    log(`| ${name} | ${cells[0]} | ${cells[1]} | ${ratio} | ${b !== null && l !== null && target ? target(b, l) : ""} |`);
  };
  const c = (id: string) => (r: SizeReport) => r.cases[id] ?? null;
  const cpu = (id: string) => (r: SizeReport) => {
    const s = c(id)(r);
    return s ? cpuPerRequest(s) : null;
  };
  const met = (ok: boolean, what: string) => `${what}: ${ok ? "met" : "MISSED"}`;
  log("");
  log(`Scale: ${base.label} against ${large.label} wallets, ${settings.rounds} rounds of ${settings.durationSeconds} s`);
  log(`| | ${base.label} | ${large.label} | ${large.label} / ${base.label} | target at ${large.label} |`);
  log("|---|---|---|---|---|");
  row("wallets / links", (r) => r.counts.wallets, (x) => n(x));
  row("bulk load (generator), s", (r) => r.loadSeconds, (x) => n(x, 0));
  row(`import of ${n(IMPORT_WALLETS)} wallets, observations/s`, (r) => r.importFigures.perSecond, (x) => n(x), (_b, l) => met(l >= 50_000, ">= 50,000"));
  row("on disk, bytes per wallet (tables + indexes)", (r) => r.disk.perWallet, (x) => n(x), (_b, l) => met(l <= 1024, "<= 1 KiB"));
  row("metered GET /wallet, req/s", (r) => c("metered")(r)?.rps ?? null, (x) => n(x), (b, l) => met(l >= 0.9 * b, `>= 0.9 of ${base.label}`));
  row("metered GET /wallet, CPU µs/request (server + PG)", cpu("metered"), (x) => n(x));
  row(`batch of ${LARGE_BATCH_SIZE} alone, p50 ms`, (r) => c("batch-200-alone")(r)?.p50Ms ?? null, (x) => n(x, 1));
  row("reverse page, 1 client, p99 ms", (r) => c("reverse-1")(r)?.p99Ms ?? null, (x) => n(x, 1), (b, l) => met(l <= 1.2 * b, `<= 1.2x ${base.label}`));
  row(`reverse page, ${settings.reverseClients} clients, p99 ms`, (r) => c("reverse-many")(r)?.p99Ms ?? null, (x) => n(x, 1), (b, l) => met(l <= 1.2 * b, `<= 1.2x ${base.label}`));
  row(`estimate of ${n(ESTIMATE_ADDRESSES)} (${ESTIMATE_ADDRESSES / ESTIMATE_LIST} calls of ${n(ESTIMATE_LIST)}), s`, (r) => r.estimate.seconds, (x) => n(x, 2));
  row(`estimate of ${n(ESTIMATE_LIST)}, p50 ms`, (r) => r.estimate.p50Ms, (x) => n(x, 1));
  row(`job of ${n(settings.jobSize)}, wallets/s end to end`, (r) => r.job?.walletsPerSecond ?? null, (x) => n(x));
  log("");
  for (const r of reports) {
    log(`On disk, ${r.label}: ${r.disk.relations.map((x) => `${x.name.trim()} ${n(x.bytes / 1048576)} MB`).join(", ")}`);
  }
  for (const [i, plan] of base.plans.entries()) {
    const other = large.plans[i];
    log(`${plan.name}: ${base.label} ${n(plan.ms, 2)} ms (shared hit ${plan.hit}, read ${plan.read}); ${large.label} ${n(other.ms, 2)} ms (shared hit ${other.hit}, read ${other.read})`);
  }
  for (const r of reports) {
    for (const plan of r.plans) {
      log("");
      log(`EXPLAIN (ANALYZE, BUFFERS), ${plan.name}, ${r.label}:`);
      log(plan.text);
    }
  }
}
