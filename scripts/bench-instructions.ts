// Instructions per request, counted by callgrind: the real server run under valgrind in two
// configurations side by side, each driven with the same metered GET /wallet sequence, counted
// only over the measured requests (callgrind_control zeroes the counters after the warm-up and
// dumps them after the last request). Instruction counts do not depend on what else the machine is
// doing, so a difference of a few percent that req/s cannot resolve on a shared machine shows here.
//
//   npx tsx scripts/bench-instructions.ts [--warmup 4000] [--requests 2000]
//       [--a LOG_LEVEL=silent,METRICS=off] [--b LOG_LEVEL=info,METRICS=on]
//
// Needs valgrind and the bench database (`npm run bench` builds it). Node runs with
// --single-threaded, so V8's compiler and GC threads are counted on the main thread, in the
// request that caused them. Under valgrind a request takes about 100 ms: the defaults take about 12
// minutes.
import { spawn } from "node:child_process";
import { readdirSync, readFileSync, rmSync } from "node:fs";
import { createHash } from "node:crypto";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { parseArgs } from "node:util";
import { openDatabase } from "../src/db/open.ts";
import { createBenchAccount, ensureBenchPlan } from "./bench-accounts.ts";
import { benchAddress } from "./bench-index.ts";

const DATABASE_URL = `postgres://postgres@127.0.0.1:5432/${process.env.BENCH_DATABASE ?? "walletid_bench"}`;
// valgrind names its control pipe after these; callgrind_control must see the same values
const VALGRIND_ENV = { USER: "walletid", LOGNAME: "walletid", HOST: "127.0.0.1" };

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function envList(text: string): Record<string, string> {
  return Object.fromEntries(text.split(",").filter(Boolean).map((kv) => [kv.slice(0, kv.indexOf("=")), kv.slice(kv.indexOf("=") + 1)]));
}

/** The same sequence for every server: odd requests a wallet of the index, even ones unknown. */
function address(i: number): string {
  return i % 2 === 1 ? benchAddress(1 + ((i * 7919) % 1_000_000)) : `0x${createHash("sha256").update(`unknown:${i}`).digest("hex").slice(0, 40)}`;
}

/**
 * One request at a time: concurrent callers would be metered in groups whose sizes depend on
 * timing (and valgrind slows each server differently), and a group's statement is shared by its
 * calls, so the instructions a request would differ with the grouping rather than the
 * configuration (with four callers, two runs measured 1,060k against 863k, then 830k against 830k).
 */
async function drive(url: string, key: string, from: number, count: number): Promise<void> {
  for (let i = from; i < from + count; i++) {
    const res = await fetch(`${url}/api/v1/wallet/${address(i)}`, { headers: { authorization: `Bearer ${key}` } });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`GET /wallet answered ${res.status}`);
  }
}

function control(pid: number, command: "-z" | "-d"): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn("callgrind_control", [command, String(pid)], { env: { ...process.env, ...VALGRIND_ENV }, stdio: "ignore" });
    child.once("exit", (code) => (code === 0 ? resolve() : reject(new Error(`callgrind_control ${command} exited ${code}`))));
  });
}

async function countOne(name: string, env: Record<string, string>, key: string, port: number, warmup: number, requests: number): Promise<number> {
  const prefix = join(tmpdir(), `walletid-instructions-${process.pid}-${name}`);
  const child = spawn(
    "valgrind",
    ["--tool=callgrind", `--callgrind-out-file=${prefix}.%p`, "node", "--single-threaded", "--import", "tsx", "src/main.ts"],
    {
      env: { ...process.env, ...VALGRIND_ENV, DATABASE_URL, WORKER: "0", PORT: String(port), ...env },
      stdio: "ignore",
    },
  );
  const url = `http://127.0.0.1:${port}`;
  try {
    for (let i = 0; ; i++) {
      if (i === 900) throw new Error(`the ${name} server did not answer within 15 minutes`);
      const res = await fetch(`${url}/healthz`).catch(() => undefined);
      if (res?.status === 200) break;
      await sleep(1000);
    }
    await drive(url, key, 0, warmup);
    await control(child.pid!, "-z");
    await drive(url, key, warmup, requests);
    await control(child.pid!, "-d");
    await sleep(1000);
    const dump = readdirSync(tmpdir()).map((f) => join(tmpdir(), f)).find((f) => f.startsWith(`${prefix}.${child.pid}.`));
    if (!dump) throw new Error(`no callgrind dump for the ${name} server`);
    const summary = /^summary: (\d+)$/m.exec(readFileSync(dump, "utf8"));
    if (!summary) throw new Error(`no summary line in ${dump}`);
    return Number(summary[1]);
  } finally {
    child.kill("SIGTERM");
    for (const f of readdirSync(tmpdir())) if (join(tmpdir(), f).startsWith(prefix)) rmSync(join(tmpdir(), f), { force: true });
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      warmup: { type: "string", default: "4000" },
      requests: { type: "string", default: "2000" },
      a: { type: "string", default: "LOG_LEVEL=silent,METRICS=off" },
      b: { type: "string", default: "LOG_LEVEL=info,METRICS=on" },
    },
  });
  const [warmup, requests] = [Number(values.warmup), Number(values.requests)];
  const db = await openDatabase({ databaseUrl: DATABASE_URL, max: 1 });
  let key: string;
  try {
    // an account on the bench's custom plan (no ceilings): every request is counted and billed
    await ensureBenchPlan(db);
    key = (await createBenchAccount(db, "instructions", new Date())).apiKey;
  } finally {
    await db.close();
  }
  const configs = [
    { name: "a", env: envList(values.a) },
    { name: "b", env: envList(values.b) },
  ];
  console.log(`Counting ${requests} metered GET /wallet after ${warmup} of warm-up, the two servers side by side under callgrind ...`);
  const counts = await Promise.all(configs.map((c, i) => countOne(c.name, c.env, key, 31_000 + (process.pid % 1000) * 2 + i, warmup, requests)));
  configs.forEach((c, i) => console.log(`${c.name} (${values[c.name as "a" | "b"]}): ${Math.round(counts[i] / requests).toLocaleString("en-US")} instructions a request`));
  console.log(`b / a: ${(counts[1] / counts[0]).toFixed(4)}`);
}

main().catch((err: Error) => {
  console.error(err.message);
  process.exit(1);
});
