// npm run soak: several API servers and job workers on one PostgreSQL database (created fresh),
// under mixed load and faults for a set time, then one summary line of what must hold: every
// Idempotency-Key billed once and the ledger equal to what the answers say was billed, every job
// completed and billed once, every purchase granted once, no 5xx but 503 with Retry-After, the
// longest answer outside the fault windows, and requests per second. Exits 1 on any violation.
//
//   npm run soak -- [--servers 2] [--workers 2] [--seconds 300] [--clients 6] [--wallets 20000]
//                   [--pgbouncer] [--database-url postgres://postgres@127.0.0.1:5432] [--no-faults]
//
// Faults: every 30 s (the first at 15 s) a random server or worker is killed with SIGKILL and
// started again at once; once, at 40% of the run, every backend of the service's database is
// terminated (pg_terminate_backend). A fault window runs from the fault until the restarted
// process answers (or 5 s after the storm), plus 5 s. --pgbouncer puts a PgBouncer in transaction
// mode in front (DATABASE_URL), with DATABASE_DIRECT_URL on PostgreSQL itself. Children's output
// goes to .bench/soak/<database>/; every child is killed when the soak ends, however it ends.
import { spawn, type ChildProcess } from "node:child_process";
import { closeSync, mkdirSync, openSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { parseArgs } from "node:util";
import postgres from "postgres";
import type { Db } from "../src/db/types.ts";
import { createAccount, grantCredits } from "../src/ledger/accounts.ts";
import { createApiKey } from "../src/ledger/keys.ts";
import { startPgbouncer, type Pgbouncer } from "../test/support/pgbouncer.ts";
import { serverNodeFlags, workerArgs } from "../test/support/process.ts";
import { benchAddress, CROWD_HANDLE, prepareIndex } from "./generated-index.ts";
import { startFacilitatorProcess } from "./purchase.ts";
import { freePort, ROOT, sleep, waitHealthy } from "./servers.ts";
import { buyerCaller, freeCaller, jobCaller, keyedCaller, newTally, SOAK_PAY_TO, type Target } from "./soak-clients.ts";

const { values: args } = parseArgs({
  options: {
    servers: { type: "string", default: "2" },
    workers: { type: "string", default: "2" },
    seconds: { type: "string", default: "300" },
    clients: { type: "string", default: "6" },
    wallets: { type: "string", default: "20000" },
    pgbouncer: { type: "boolean", default: false },
    "database-url": { type: "string", default: process.env.SOAK_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432" },
    "no-faults": { type: "boolean", default: false },
  },
});
const SERVERS = Number(args.servers);
const WORKERS = Number(args.workers);
const SECONDS = Number(args.seconds);
const CLIENTS = Number(args.clients);
const WALLETS = Number(args.wallets);
const FAULTS = !args["no-faults"];
const PG_SERVER = args["database-url"]!.replace(/\/[^/@]*$/, "").replace(/\/$/, "");
const DATABASE = `walletid_soak_${process.pid}`;
const LOGS = join(ROOT, ".bench", "soak", DATABASE);
const PLAN = "SoakCustom";

const log = (line: string) => console.log(`[soak ${new Date().toISOString().slice(11, 19)}] ${line}`);

interface Child {
  name: string;
  process?: ChildProcess;
  start(): Promise<void>;
}
const children: Child[] = [];
const stray = new Set<ChildProcess>();
let facilitatorPid: number | undefined;

/** Kills every child at once (SIGKILL): on any exit, so nothing outlives the soak. */
function killAll(): void {
  if (facilitatorPid) {
    try {
      process.kill(facilitatorPid, "SIGKILL");
    } catch {
      // already gone
    }
  }
  for (const child of stray) {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  }
}
process.on("exit", killAll);
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => {
    killAll();
    process.exit(130);
  });
}

function spawnLogged(name: string, args: string[], env: Record<string, string>): ChildProcess {
  const fd = openSync(join(LOGS, `${name}.log`), "a");
  const child = spawn(process.execPath, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ["ignore", fd, fd] });
  closeSync(fd);
  stray.add(child);
  child.once("exit", () => stray.delete(child));
  return child;
}

function serverChild(index: number, port: number, env: Record<string, string>): Child {
  const url = `http://127.0.0.1:${port}`;
  const child: Child = {
    name: `server-${index}`,
    async start() {
      const proc = spawnLogged(child.name, [...serverNodeFlags(), "--import", "tsx", "src/main.ts"], {
        ...env,
        PORT: String(port),
        HOST: "127.0.0.1",
        PUBLIC_URL: url,
      });
      child.process = proc;
      const exited = new Promise((resolve) => proc.once("exit", resolve));
      // a start takes seconds on an idle machine, a minute or more on one loaded many times over
      const state = await waitHealthy(url, exited, 240_000);
      if (state !== "healthy") throw new Error(`Cannot start ${child.name}: it ${state === "exited" ? "exited" : "did not answer /healthz within 240 s"} (see ${LOGS}/${child.name}.log)`);
    },
  };
  return child;
}

function workerChild(index: number, env: Record<string, string>): Child {
  const child: Child = {
    name: `worker-${index}`,
    async start() {
      child.process = spawnLogged(child.name, workerArgs(), env);
    },
  };
  return child;
}

async function soakAccount(db: Db, name: string, now: Date): Promise<{ accountId: string; apiKey: string }> {
  const { accountId } = await createAccount(db, { now });
  await db.query("UPDATE accounts SET plan_override = $2 WHERE id = $1", [accountId, PLAN]);
  await grantCredits(db, { accountId, pack: "Index", quantity: 40, grantKey: `soak-${name}`, now });
  const key = await createApiKey(db, { accountId, name, now });
  if (!key.ok) throw new Error(`Cannot set up the soak's accounts: ${key.code}`);
  return { accountId, apiKey: key.apiKey };
}

interface Window {
  from: number;
  to: number;
}

async function main(): Promise<number> {
  mkdirSync(LOGS, { recursive: true });
  const index = await prepareIndex({ serverUrl: PG_SERVER, adminDatabase: "postgres", database: DATABASE, wallets: WALLETS, rebuild: true, log });
  const { db, databaseUrl } = index;
  let bouncer: Pgbouncer | undefined;
  let facilitator: { url: string; pid: number | undefined; stop: () => Promise<void> } | undefined;
  try {
    const now = new Date();
    await db.query(
      `INSERT INTO plans (name, rank, requests_per_minute, requests_per_day, requests_per_month, max_batch_size)
       VALUES ($1, 100, NULL, NULL, NULL, 1000) ON CONFLICT (name) DO NOTHING`,
      [PLAN],
    );
    const free = await soakAccount(db, "free", now);
    const keyed = await soakAccount(db, "keyed", now);
    const jobAccounts = await Promise.all([1, 2, 3].map((i) => soakAccount(db, `jobs-${i}`, now)));

    facilitator = await startFacilitatorProcess();
    facilitatorPid = facilitator.pid;
    if (args.pgbouncer) bouncer = await startPgbouncer(databaseUrl, { poolSize: 20 });
    const env: Record<string, string> = {
      DATABASE_URL: bouncer?.url ?? databaseUrl,
      ...(bouncer ? { DATABASE_DIRECT_URL: databaseUrl, DATABASE_POOLER: "transaction" } : {}),
      WORKER: "0",
      MAINTENANCE_AT: "off",
      LOG_LEVEL: "warn",
      // a killed worker's job is taken over within seconds, not the default minute
      JOB_LEASE_SECONDS: "10",
      X402_FACILITATOR_URL: facilitator.url,
      X402_PAY_TO: SOAK_PAY_TO,
      // a replay of a purchase whose server was killed after settling reads the token here
      X402_RPC_URL: `${facilitator.url}/rpc`,
    };
    const ports = await Promise.all(Array.from({ length: SERVERS }, () => freePort()));
    const servers = ports.map((port, i) => serverChild(i + 1, port, env));
    const workers = Array.from({ length: WORKERS }, (_, i) => workerChild(i + 1, env));
    children.push(...servers, ...workers);
    await Promise.all(children.map((c) => c.start()));
    log(`${SERVERS} servers, ${WORKERS} workers on ${DATABASE}${bouncer ? " through PgBouncer (transaction mode)" : ""}; ${WALLETS} wallets; ${SECONDS} s${FAULTS ? ", faults on" : ""}`);

    const tally = newTally();
    const began = performance.now();
    const clock = () => performance.now() - began;
    let stopped = false;
    const target: Target = { urls: ports.map((p) => `http://127.0.0.1:${p}`), tally, clock, stopping: () => stopped };
    const wallet = () => benchAddress(1 + Math.floor(Math.random() * WALLETS));

    // faults
    const windows: Window[] = [];
    let kills = 0;
    let stormed = false;
    let terminated = 0;
    const restarting = new Set<Child>();
    const restarts: Promise<void>[] = [];
    const faults = (async () => {
      if (!FAULTS) return;
      const stormAt = SECONDS * 400;
      let nextKill = 15_000;
      while (!stopped) {
        await sleep(250);
        if (!stormed && clock() >= stormAt) {
          stormed = true;
          const at = clock();
          const rows = await db.query<{ n: number }>(
            "SELECT count(pg_terminate_backend(pid))::integer AS n FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()",
          );
          terminated = rows[0]?.n ?? 0;
          windows.push({ from: at, to: clock() + 10_000 });
          log(`storm: terminated ${terminated} backends`);
        }
        if (clock() >= nextKill && clock() < SECONDS * 1000 - 5000) {
          nextKill += 30_000;
          // a process still starting again after the last kill is left to finish
          const victims = children.filter((c) => !restarting.has(c));
          const victim = victims[Math.floor(Math.random() * victims.length)];
          if (!victim) continue;
          const at = clock();
          const window: Window = { from: at, to: Number.POSITIVE_INFINITY };
          windows.push(window);
          restarting.add(victim);
          kills++;
          const restart = (async () => {
            await new Promise((resolve) => {
              const proc = victim.process;
              if (!proc || proc.exitCode !== null || proc.signalCode !== null) resolve(null);
              else proc.once("exit", resolve);
              proc?.kill("SIGKILL");
            });
            await victim.start().catch((err: Error) => log(err.message));
            window.to = clock() + 5000;
            restarting.delete(victim);
            log(`killed ${victim.name} (SIGKILL) and started it again: answering after ${((clock() - at) / 1000).toFixed(1)} s`);
          })();
          restarts.push(restart);
        }
      }
      await Promise.all(restarts);
    })();

    const callers = [
      ...Array.from({ length: CLIENTS }, () => freeCaller(target, free.apiKey, wallet, CROWD_HANDLE)),
      keyedCaller(target, keyed.apiKey, wallet, "a"),
      keyedCaller(target, keyed.apiKey, wallet, "b"),
      ...jobAccounts.map((a) => jobCaller(target, a.apiKey, wallet)),
      buyerCaller(target, facilitator.url),
    ];
    await sleep(SECONDS * 1000);
    stopped = true;
    const elapsed = clock() / 1000;
    log("load stopped; waiting for keyed calls and jobs to be answered");
    await faults;
    // keyed batches and signed payments are driven to an answer; jobs to completion
    const drained = await Promise.race([Promise.all(callers).then(() => true), sleep(300_000).then(() => false)]);
    const jobsDone = await waitForJobs(db, 300_000);

    // --- checks ---
    const violations: string[] = [];
    if (!drained) violations.push("clients still waiting for answers 5 minutes after the load stopped");
    violations.push(...tally.bad5xx.slice(0, 20));
    if (tally.bad5xx.length > 20) violations.push(`... and ${tally.bad5xx.length - 20} more`);

    // every key billed once, as its answer says
    const keyedDebits = await db.query<{ call_key: string; matches: number }>("SELECT call_key, matches FROM debits WHERE account_id = $1", [keyed.accountId]);
    const perKey = new Map<string, { calls: Set<string>; matches: number }>();
    for (const d of keyedDebits) {
      const k = d.call_key.replace(/^batch-idem:/, "").replace(/@[^@]*$/, "");
      const entry = perKey.get(k) ?? { calls: new Set(), matches: 0 };
      entry.calls.add(d.call_key);
      entry.matches += d.matches;
      perKey.set(k, entry);
    }
    let keyedAnswered = 0;
    for (const [k, matched] of tally.keyed) {
      keyedAnswered += matched;
      const entry = perKey.get(k);
      if (matched > 0 && (!entry || entry.calls.size !== 1 || entry.matches !== matched)) {
        violations.push(`key ${k}: answered ${matched} matches, ledger ${entry ? `${entry.matches} in ${entry.calls.size} debits` : "nothing"}`);
      }
    }
    for (const k of perKey.keys()) if (!tally.keyed.has(k)) violations.push(`key ${k}: debited, never answered`);
    const keyedLedger = keyedDebits.reduce((s, d) => s + d.matches, 0);
    if (keyedLedger !== keyedAnswered) violations.push(`keyed batches: ledger ${keyedLedger} != answers ${keyedAnswered}`);

    // calls without a key: billed as answered, plus at most what the unanswered attempts could have been
    const [freeRow] = await db.query<{ s: string }>("SELECT coalesce(sum(matches), 0) AS s FROM debits WHERE account_id = $1", [free.accountId]);
    const freeLedger = Number(freeRow.s);
    if (freeLedger < tally.freeBilled || freeLedger > tally.freeBilled + tally.freeUnansweredMax) {
      violations.push(`calls without a key: ledger ${freeLedger} outside answers ${tally.freeBilled} + unanswered at most ${tally.freeUnansweredMax}`);
    }

    // every job completed and billed exactly once
    const jobs = await db.query<{ id: string; status: string; matched: number | null; debits: number; debited: number }>(
      `SELECT j.id, j.status, j.matched,
              (SELECT count(*)::integer FROM debits d WHERE d.call_key = 'job:' || j.id::text) AS debits,
              (SELECT coalesce(sum(d.matches), 0)::integer FROM debits d WHERE d.call_key = 'job:' || j.id::text) AS debited
         FROM jobs j WHERE j.account_id = ANY($1::uuid[])`,
      [jobAccounts.map((a) => a.accountId)],
    );
    let jobMatches = 0;
    for (const j of jobs) {
      jobMatches += j.matched ?? 0;
      if (j.status !== "completed") violations.push(`job ${j.id}: ${j.status}`);
      else if ((j.matched ?? 0) > 0 && (j.debits !== 1 || j.debited !== j.matched)) violations.push(`job ${j.id}: matched ${j.matched}, debited ${j.debited} in ${j.debits}`);
    }
    for (const id of tally.jobsAccepted) if (!jobs.some((j) => j.id === id)) violations.push(`job ${id}: accepted, not in the database`);
    if (!jobsDone) violations.push("jobs still running 5 minutes after the load stopped");
    const [otherJobDebits] = await db.query<{ n: number }>(
      "SELECT count(*)::integer AS n FROM debits WHERE account_id = ANY($1::uuid[]) AND call_key NOT LIKE 'job:%'",
      [jobAccounts.map((a) => a.accountId)],
    );
    if (otherJobDebits.n > 0) violations.push(`job accounts: ${otherJobDebits.n} debits that are not a job's`);

    // every purchase granted once (a grant keyed x402:<payment>; loyalty packs have keys of their own)
    const [grants] = await db.query<{ payments: number; grants: number; loyalty: number }>(
      `SELECT (SELECT count(*)::integer FROM x402_payments WHERE state = 'granted') AS payments,
              (SELECT count(*)::integer FROM credit_grants WHERE grant_key LIKE 'x402:%') AS grants,
              (SELECT count(*)::integer FROM credit_grants WHERE grant_key LIKE 'x402-loyalty:%') AS loyalty`,
    );
    if (grants.payments !== tally.purchases || grants.grants !== tally.purchases) {
      violations.push(`purchases: ${tally.purchases} answered, ${grants.payments} payments granted, ${grants.grants} grants`);
    }
    // what the facilitator settled (one Agent pack: 1 USDC each) must all have been granted
    let settled = -1;
    if (tally.buyer) {
      const res = await fetch(`${facilitator.url}/balance/${tally.buyer.address}`);
      const { balance } = (await res.json()) as { balance: string };
      settled = Number((tally.buyer.funded - BigInt(balance)) / 1_000_000n);
      if (settled !== grants.payments) violations.push(`purchases: ${settled} settled at the facilitator, ${grants.payments} granted`);
    }
    violations.push(...tally.purchaseFailures.slice(0, 5).map((f) => `purchase refused: ${f}`));

    // HOOK (webhooks): when webhook endpoints exist, register a receiver here before the load,
    // and check that each event arrived once per endpoint (duplicates counted by webhook-id).

    const outside = tally.timings.filter(([s, e]) => !windows.some((w) => s < w.to && e > w.from));
    const longest = outside.reduce((m, [s, e]) => Math.max(m, e - s), 0);
    const other = tally.statuses["5xx"] ?? 0;
    const summary = [
      `soak ${violations.length === 0 ? "PASS" : "FAIL"}: ${elapsed.toFixed(0)} s, ${SERVERS} servers, ${WORKERS} workers, ${bouncer ? "PgBouncer" : "direct"}`,
      `${(tally.answered / elapsed).toFixed(1)} req/s (${tally.answered} answered, ${tally.unanswered} unanswered and retried)`,
      `keyed batches: ${tally.keyed.size} keys billed once, ledger ${keyedLedger} = answers ${keyedAnswered}`,
      `other calls: ledger ${freeLedger} = answers ${tally.freeBilled} + ${freeLedger - tally.freeBilled} of unanswered (at most ${tally.freeUnansweredMax})`,
      `jobs: ${jobs.filter((j) => j.status === "completed").length}/${jobs.length} completed, billed once (${jobMatches} matches)`,
      `purchases: ${tally.purchases} granted once (+${grants.loyalty} loyalty), ${settled} settled, ${tally.purchasesAbandoned} signatures abandoned`,
      `5xx: ${tally.bad5xx.length} bad, ${other - tally.bad5xx.length} 503 with Retry-After`,
      FAULTS ? `faults: ${kills} kill -9, ${stormed ? 1 : 0} storm (${terminated} backends)` : "faults: off",
      `longest answer outside fault windows ${longest.toFixed(0)} ms`,
    ].join(" | ");
    for (const v of violations) console.error(`VIOLATION: ${v}`);
    console.log(summary);
    return violations.length === 0 ? 0 : 1;
  } finally {
    killAll();
    await bouncer?.stop();
    await facilitator?.stop();
    await db.close();
    const admin = postgres(`${PG_SERVER}/postgres`, { max: 1, onnotice: () => {} });
    await admin.unsafe(`DROP DATABASE IF EXISTS ${DATABASE} WITH (FORCE)`).catch(() => {});
    await admin.end({ timeout: 5 });
  }
}

/** Waits for every job to be completed or failed; false when some are still running at the deadline. */
async function waitForJobs(db: Db, withinMs: number): Promise<boolean> {
  const deadline = Date.now() + withinMs;
  while (Date.now() < deadline) {
    const [row] = await db.query<{ n: number }>("SELECT count(*)::integer AS n FROM jobs WHERE status IN ('pending', 'processing')");
    if (row.n === 0) return true;
    await sleep(500);
  }
  return false;
}

main().then(
  (code) => process.exit(code),
  (err: Error) => {
    console.error(`Cannot run the soak: ${err.stack ?? err.message}`);
    process.exit(1);
  },
);
