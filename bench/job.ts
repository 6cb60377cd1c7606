// The bench's job case: one job of 100,000 addresses through the real server and a separate
// worker process (`npm run worker`: the bundled worker with its heap cap), half of them in the index and half resolved by fast local
// fake upstreams (Neynar-shaped API and a JSON-RPC endpoint for ENS). Reports wallets per
// second through each stage and the worker's peak memory.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import process from "node:process";
import type { Db } from "../src/db/types.ts";
import { processCpuMicros } from "./cpu.ts";
import { ROOT } from "./servers.ts";
import { workerArgs } from "../test/support/process.ts";
import { startFakeEthRpc, startFakeNeynar } from "../test/support/upstreams.ts";

// fids of the fake's accounts, far above the generated index's, so the bench can remove them
const FID_BASE = 1_500_000_000;

export interface JobCaseServer {
  url: string;
  failure(): string | undefined;
  stop(): Promise<void>;
}

export interface JobCaseReport {
  wallets: number;
  inIndex: number;
  live: number;
  submitMs: number;
  completeSeconds: number;
  walletsPerSecond: number;
  pagesSeconds: number;
  stages: Record<string, { wallets: number; seconds: number; walletsPerSecond: number }>;
  workerPeakRssMb: number | null;
  /** CPU seconds (user + system) from submission to completion, from /proc; null where it is not there. */
  cpuSeconds: { worker: number; postgres: number } | null;
  matched: number;
  billed: number;
  found: number;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Peak resident memory of a process (VmHWM), in MB; null where /proc is not there. */
function peakRssMb(pid: number): number | null {
  try {
    const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return match ? Number(match[1]) / 1024 : null;
  } catch {
    return null;
  }
}

/** CPU seconds (utime + stime) a process has used so far; null once it is gone or without /proc. */
function cpuSeconds(pid: number): number | null {
  const micros = processCpuMicros(pid);
  return micros === undefined ? null : micros / 1e6;
}

/**
 * CPU of the PostgreSQL backends serving the bench database (the server's pool and the worker's),
 * sampled while the job runs: per backend, the last figure seen minus the first. Other databases'
 * backends on the same server (other people's tests) are not counted.
 */
function backendCpu(db: Db, database: string) {
  const first = new Map<number, number>();
  const last = new Map<number, number>();
  return {
    async sample() {
      const rows = await db.query<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", [database]);
      for (const { pid } of rows) {
        const cpu = cpuSeconds(pid);
        if (cpu === null) continue;
        if (!first.has(pid)) first.set(pid, cpu);
        last.set(pid, cpu);
      }
    },
    seconds: () => [...last].reduce((sum, [pid, cpu]) => sum + cpu - first.get(pid)!, 0),
  };
}

function shuffle<T>(items: T[]): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [items[i], items[j]] = [items[j], items[i]];
  }
  return items;
}

export async function runJobCase(options: {
  db: Db;
  databaseUrl: string;
  apiKey: string;
  accountId: string;
  size: number;
  serverEntry: string;
  startServer: (name: string, entry: string, env: Record<string, string>) => Promise<JobCaseServer>;
  log: (line: string) => void;
}): Promise<JobCaseReport> {
  const { db, log } = options;
  const half = Math.floor(options.size / 2);
  const start = `0x${Math.floor(Math.random() * 8).toString(16)}`;
  const indexed = (
    await db.query<{ wallet: string }>("SELECT DISTINCT wallet FROM links WHERE wallet >= $1 ORDER BY wallet LIMIT $2", [start, half])
  ).map((r) => r.wallet);
  const live = Array.from({ length: options.size - indexed.length }, () => `0x${randomBytes(20).toString("hex")}`);
  const liveIndex = new Map(live.map((a, i) => [a, i]));
  const wallets = shuffle([...indexed, ...live]);

  // every live address has a Farcaster account (every other one with a verified X account), and half an ENS name
  const neynar = await startFakeNeynar((a) => {
    const i = liveIndex.get(a);
    return i === undefined ? undefined : { fid: FID_BASE + i, username: `benchlive${i}`, followers: i % 500, ...(i % 2 ? {} : { x: `bx${i}` }) };
  });
  const rpc = await startFakeEthRpc((a) => {
    const i = liveIndex.get(a);
    return i !== undefined && i % 2 === 0 ? `benchlive${i}.eth` : undefined;
  });
  const env = { DATABASE_URL: options.databaseUrl, NEYNAR_API_URL: neynar.url, ETH_RPC_URL: rpc.url };
  const server = await options.startServer("job", options.serverEntry, { ...env, WORKER: "0" });
  const worker = spawn(process.execPath, workerArgs(), {
    cwd: ROOT,
    env: { ...process.env, ...env, LOG_LEVEL: "info" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  // log lines go to stdout, a failure to start to stderr: both are kept for the report
  let workerLog = "";
  const keep = (c: Buffer) => (workerLog = (workerLog + c.toString()).slice(-4000));
  worker.stdout!.on("data", keep);
  worker.stderr!.on("data", keep);
  const workerExited = new Promise<void>((resolve) => worker.once("exit", () => resolve()));
  const auth = { Authorization: `Bearer ${options.apiKey}` };

  try {
    // submitted only once this worker polls, so the figures are its own
    const ready = Date.now() + 60_000;
    while (!/job worker .* started/.test(workerLog)) {
      if (worker.exitCode !== null || Date.now() > ready) throw new Error(`Cannot run the job case: the worker did not start:\n${workerLog}`);
      await sleep(100);
    }
    log(`Job case: ${wallets.length.toLocaleString("en-US")} addresses (${indexed.length.toLocaleString("en-US")} in the index, ${live.length.toLocaleString("en-US")} live).`);
    const t0 = performance.now();
    const sub = await fetch(`${server.url}/api/v1/jobs`, {
      method: "POST",
      headers: { ...auth, "Content-Type": "application/json" },
      body: JSON.stringify({ wallets }),
    });
    const subBody = (await sub.json()) as any;
    if (sub.status !== 202) throw new Error(`Cannot run the job case: POST /jobs answered ${sub.status}: ${JSON.stringify(subBody)}`);
    const submitMs = performance.now() - t0;
    const workerCpuAtStart = cpuSeconds(worker.pid!);
    const postgresCpu = backendCpu(db, new URL(options.databaseUrl).pathname.slice(1));
    await postgresCpu.sample();
    const id: string = subBody.data.job_id;

    let peak: number | null = null;
    let status = "pending";
    let lastLog = 0;
    while (status !== "completed") {
      await sleep(250);
      peak = peakRssMb(worker.pid!) ?? peak;
      await postgresCpu.sample();
      const res = await fetch(`${server.url}/api/v1/jobs/${id}?limit=1`, { headers: auth });
      const body = (await res.json()) as any;
      status = body.data.status;
      if (status === "failed") throw new Error(`Cannot run the job case: the job failed; worker log:\n${workerLog}`);
      if (worker.exitCode !== null) throw new Error(`Cannot run the job case: the worker exited:\n${workerLog}`);
      if (performance.now() - lastLog > 5000) {
        lastLog = performance.now();
        log(`  job ${body.data.progress.processed}/${body.data.progress.total} (${body.data.progress.stage ?? "between chunks"})`);
      }
    }
    const completeSeconds = (performance.now() - t0) / 1000;
    peak = peakRssMb(worker.pid!) ?? peak;
    await postgresCpu.sample();
    const workerCpu = cpuSeconds(worker.pid!);
    const cpu = workerCpu !== null && workerCpuAtStart !== null ? { worker: workerCpu - workerCpuAtStart, postgres: postgresCpu.seconds() } : null;

    const t1 = performance.now();
    let offset: number | null = 0;
    let found = 0;
    let matched = 0;
    while (offset !== null) {
      const res = await fetch(`${server.url}/api/v1/jobs/${id}?offset=${offset}`, { headers: auth });
      const body = (await res.json()) as any;
      found += body.meta.found;
      matched = body.meta.matched;
      offset = body.meta.next_offset;
    }
    const pagesSeconds = (performance.now() - t1) / 1000;

    const [job] = await db.query<{ stage_stats: Record<string, { wallets: number; ms: number }> }>(
      "SELECT stage_stats FROM jobs WHERE id = $1",
      [id],
    );
    const [billed] = await db.query<{ n: string }>(
      "SELECT coalesce(sum(matches), 0) AS n FROM debits WHERE account_id = $1 AND call_key = $2",
      [options.accountId, `job:${id}`],
    );
    const stages = Object.fromEntries(
      Object.entries(job.stage_stats).map(([stage, s]) => [
        stage,
        { wallets: s.wallets, seconds: s.ms / 1000, walletsPerSecond: s.ms > 0 ? (s.wallets * 1000) / s.ms : 0 },
      ]),
    );
    return {
      wallets: wallets.length,
      inIndex: indexed.length,
      live: live.length,
      submitMs,
      completeSeconds,
      walletsPerSecond: wallets.length / completeSeconds,
      pagesSeconds,
      stages,
      workerPeakRssMb: peak,
      cpuSeconds: cpu,
      matched,
      billed: Number(billed.n),
      found,
    };
  } finally {
    if (worker.exitCode === null) worker.kill("SIGTERM");
    await workerExited;
    await server.stop();
    await neynar.close();
    await rpc.close();
    // what the live sources wrote goes again, so the next run meets the same index
    try {
      // bulk: the triggers refresh reverse_entries for 50,000 wallets, longer than a statement may take
      await db.transaction(async (tx) => {
        await tx.query("DELETE FROM links WHERE wallet = ANY($1::text[])", [live]);
        await tx.query("DELETE FROM wallets WHERE address = ANY($1::text[])", [live]);
        await tx.query("DELETE FROM farcaster_accounts WHERE fid >= $1", [FID_BASE]);
        await tx.query("DELETE FROM live_answers WHERE address = ANY($1::text[])", [live]);
      }, { bulk: true });
      // and the deleted rows with them: autovacuum may be off on a shared server, and 50,000
      // wallets' worth of dead rows a run would slow every later case and run
      await db.exec("VACUUM (ANALYZE) links, wallets, farcaster_accounts, live_answers, reverse_entries, reverse_counts");
    } catch (err) {
      log(`WARNING: could not remove the job case's live wallets from the index: ${(err as Error).message}`);
    }
  }
}

export function printJobReport(r: JobCaseReport, log: (line: string) => void): void {
  const n = (x: number, d = 0) => x.toLocaleString("en-US", { maximumFractionDigits: d, minimumFractionDigits: d });
  log(`job of ${n(r.wallets)} (${n(r.inIndex)} in the index, ${n(r.live)} live): submitted in ${n(r.submitMs)} ms, completed in ${n(r.completeSeconds, 1)} s (${n(r.walletsPerSecond)} wallets/s end to end)`);
  log("stage     wallets   seconds   wallets/s");
  // write: the chunks' write transactions, which overlap the next chunk's stages
  for (const stage of ["index", "cache", "live", "onchain", "write"]) {
    const s = r.stages[stage];
    if (s) log(`${stage.padEnd(8)} ${n(s.wallets).padStart(8)}  ${n(s.seconds, 2).padStart(8)}  ${n(s.walletsPerSecond).padStart(10)}`);
  }
  log(`results read in ${n(r.pagesSeconds, 1)} s (${Math.ceil(r.wallets / 1000)} pages); ${n(r.found)} found, meta.matched ${n(r.matched)}, billed ${n(r.billed)}${r.matched === r.billed ? "" : "  MISMATCH"}`);
  log(`worker peak memory (VmHWM): ${r.workerPeakRssMb === null ? "unknown" : `${n(r.workerPeakRssMb, 1)} MB`}`);
  if (r.cpuSeconds) {
    const perWallet = (s: number) => n((s * 1e6) / r.wallets);
    log(`CPU from submission to completion: worker ${n(r.cpuSeconds.worker, 2)} s (${perWallet(r.cpuSeconds.worker)} us/wallet), PostgreSQL backends ${n(r.cpuSeconds.postgres, 2)} s (${perWallet(r.cpuSeconds.postgres)} us/wallet)`);
  }
}
