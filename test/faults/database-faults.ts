// The database fault suite (`npm run test:faults`): a real server process on PostgreSQL behind a
// proxy this suite controls, metered traffic from a small client, and four faults in turn:
// a storm of pg_terminate_backend on the server's connections, refused connections, a partition
// (blackhole) and dropped connections. Each phase lasts FAULT_PHASE_SECONDS (default 20).
// Asserted per phase: the process never exits, no answer takes longer than 5 s, no 500, and
// after the fault ends the server answers 200 again within 1 s.
// FAULT_SERVER_ROOT runs another checkout's src/main.ts (to measure a version before this suite).
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import postgres from "postgres";
import { openDatabase } from "../../src/db/open.ts";
import type { Db } from "../../src/db/types.ts";
import { createAccount, grantCredits } from "../../src/ledger/accounts.ts";
import { createApiKey } from "../../src/ledger/keys.ts";
import { ADMIN_URL, createPostgresDatabase } from "../support/db.ts";
import { W, loadFixtures } from "../support/fixtures.ts";
import { freePort } from "../support/ports.ts";
import { ROOT, startProcess, type Running } from "../support/process.ts";
import { startTcpProxy, type ProxyMode, type TcpProxy } from "../support/tcp-proxy.ts";

const PHASE_MS = Number(process.env.FAULT_PHASE_SECONDS ?? "20") * 1000;
const SERVER_ROOT = process.env.FAULT_SERVER_ROOT ?? ROOT;
const CLIENTS = 4;
/** The acceptance figures. */
const SLOW_MS = 5000;
// Serves normally within 1 s of the database's return. (It once took 3.15 s in about one run in
// eight: a pool slot whose connects all hung, fixed in postgres.js at install; docs/development.md.)
const RECOVERY_MS = Number(process.env.FAULT_RECOVERY_MS ?? "1000");
/** A request that has not answered after this long is given up on and counted as unanswered. */
const GIVE_UP_MS = 30_000;

interface Outcome {
  status: number | "no answer";
  ms: number;
  route: string;
}

interface PhaseFigures {
  phase: string;
  requests: number;
  ok: number;
  unavailable: number;
  /** 500 and every other 5xx but 503 */
  serverErrors: number;
  /** 503 without Retry-After, or a body that is not {error, code} */
  malformed: number;
  slow: number;
  unanswered: number;
  maxMs: number;
  /** the route of the slowest answer */
  slowest: string;
  crashes: number;
  recoveryMs: number;
  statuses: Record<string, number>;
}

const PLAN = "faults-unlimited";

/** One account on a plan without ceilings, with credits to spare: traffic is metered, never refused. */
async function createTrafficAccount(db: Db, now: Date): Promise<string> {
  await db.query(
    `INSERT INTO plans (name, rank, requests_per_minute, requests_per_day, requests_per_month, max_batch_size)
     VALUES ($1, 100, NULL, NULL, NULL, 1000) ON CONFLICT (name) DO NOTHING`,
    [PLAN],
  );
  const { accountId } = await createAccount(db, { now });
  await db.query("UPDATE accounts SET plan_override = $2 WHERE id = $1", [accountId, PLAN]);
  await grantCredits(db, { accountId, pack: "Index", quantity: 4, grantKey: "faults", now });
  const key = await createApiKey(db, { accountId, name: "faults", now });
  if (!key.ok) throw new Error(`Cannot create the traffic key: ${key.code}`);
  return key.apiKey;
}

/** The requests the client cycles through: every metered route, and /healthz. */
function trafficRequests(key: string): Array<{ route: string; path: string; init?: RequestInit }> {
  const auth = { Authorization: `Bearer ${key}` };
  const post = (wallets: string[]) => ({
    method: "POST",
    headers: { ...auth, "Content-Type": "application/json" },
    body: JSON.stringify({ wallets }),
  });
  const ten = [W.full, W.selfDeclared, W.twoHandles, W.corrected, W.ensOnly, W.aggregated, W.stale, W.empty, W.neverSeen, W.agent];
  return [
    { route: "wallet", path: `/api/v1/wallet/${W.full}`, init: { headers: auth } },
    { route: "batch", path: "/api/v1/batch", init: post([W.full, W.farcasterOnly, W.neverSeen]) },
    { route: "reverse", path: "/api/v1/reverse/twitter/alice", init: { headers: auth } },
    { route: "estimate", path: "/api/v1/estimate", init: post(ten) },
    { route: "usage", path: "/api/v1/usage?period=day", init: { headers: auth } },
    { route: "stats", path: "/api/v1/stats", init: { headers: auth } },
    { route: "jobs", path: "/api/v1/jobs", init: post([W.full, W.agent]) },
    { route: "healthz", path: "/healthz" },
  ];
}

async function send(url: string, request: { route: string; path: string; init?: RequestInit }): Promise<Outcome & { wellFormed: boolean }> {
  const started = performance.now();
  try {
    const res = await fetch(url + request.path, { ...request.init, signal: AbortSignal.timeout(GIVE_UP_MS) });
    const text = await res.text();
    let wellFormed = true;
    if (res.status >= 400) {
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        body = undefined;
      }
      const keys = body && typeof body === "object" ? Object.keys(body).sort().join(",") : "";
      wellFormed = keys === "code,error" && (res.status !== 503 || res.headers.get("retry-after") !== null);
    }
    return { status: res.status, ms: performance.now() - started, route: request.route, wellFormed };
  } catch {
    return { status: "no answer", ms: performance.now() - started, route: request.route, wellFormed: false };
  }
}

describe("database faults: a real server behind a controlled proxy, under metered traffic", { timeout: PHASE_MS * 4 + (process.env.FAULT_SERVER_ROOT ? 900_000 : 240_000) }, () => {
  let created: { url: string; drop: () => Promise<void> };
  let databaseName: string;
  let proxy: TcpProxy;
  let server: Running;
  let key: string;
  let port: number;
  let crashes = 0;
  let restarting: Promise<void> | undefined;
  const crashLines: string[] = [];
  const figures: PhaseFigures[] = [];

  const env = () => ({ DATABASE_URL: proxy.url, LOG_LEVEL: "info", MAINTENANCE_AT: "03:00" });

  /** A server that exits is counted as a crash and started again, so every phase is measured. */
  function watch(running: Running) {
    void running.exited.then((code) => {
      if (running !== server || stopping || stopped.has(running)) return;
      crashes++;
      const output = running.output();
      crashLines.push(`exit ${code}: ${output.slice(-1500)}`);
      restarting = (async () => {
        proxy.failStartups(undefined);
        const mode = proxy.mode();
        await proxy.setMode("pass");
        server = await startProcess(process.execPath, ["--import", "tsx", "src/main.ts"], env(), { cwd: SERVER_ROOT, port });
        watch(server);
        await proxy.setMode(mode);
      })();
    });
  }
  let stopping = false;
  const stopped = new WeakSet<Running>();
  /** Servers that stopped answering for good: replaced (by a stop and start) so later phases are measured. */
  let replaced = 0;

  before(async () => {
    created = await createPostgresDatabase();
    databaseName = new URL(created.url).pathname.slice(1);
    const db = await openDatabase({ databaseUrl: created.url, max: 1 });
    try {
      await loadFixtures(db, new Date());
      key = await createTrafficAccount(db, new Date());
    } finally {
      await db.close();
    }
    const target = new URL(ADMIN_URL);
    proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) }, databaseName);
    port = await freePort();
    server = await startProcess(process.execPath, ["--import", "tsx", "src/main.ts"], env(), { cwd: SERVER_ROOT, port });
    watch(server);
  });

  after(async () => {
    stopping = true;
    // a run against a version that crashes or hangs must still end: say what is left open, then exit
    setTimeout(() => {
      console.log(`still open after the suite: ${process.getActiveResourcesInfo().join(", ")}`);
      process.exit(process.exitCode ?? 1);
    }, 30_000).unref();
    await restarting;
    await proxy?.setMode("pass");
    await server?.stop();
    await proxy?.close();
    await created?.drop();
    if (figures.length > 0) {
      console.log("\nphase       requests   200    503   500s  slow>5s  no answer  max ms  recovery ms  crashes");
      for (const f of figures) {
        console.log(
          `${f.phase.padEnd(10)} ${String(f.requests).padStart(9)} ${String(f.ok).padStart(5)} ${String(f.unavailable).padStart(6)} ${String(f.serverErrors).padStart(6)} ${String(f.slow).padStart(8)} ${String(f.unanswered).padStart(10)} ${String(Math.round(f.maxMs)).padStart(7)} ${String(Math.round(f.recoveryMs)).padStart(12)} ${String(f.crashes).padStart(8)}`,
        );
      }
      const total = (k: "crashes" | "slow" | "serverErrors") => figures.reduce((s, f) => s + f[k], 0);
      const caught = (server.output().match(/Kept serving after an/g) ?? []).length;
      console.log(`stray rejections or exceptions caught by the last-resort handler (logged, kept serving): ${caught}`);
      if (replaced > 0) console.log(`servers replaced after they stopped answering: ${replaced}`);
      console.log(`crashes ${total("crashes")}, answers slower than 5 s ${total("slow")}, 500s ${total("serverErrors")}, recovery ${figures.map((f) => `${f.phase} ${Math.round(f.recoveryMs)} ms`).join(", ")}`);
      if (crashLines.length > 0) console.log(`crash output:\n${crashLines.join("\n---\n")}`);
    }
  });

  /** Waits until GET /wallet answers 200, probing every 50 ms; returns the time it took. */
  async function timeToServe(limitMs: number): Promise<number> {
    const started = performance.now();
    const request = trafficRequests(key)[0];
    while (performance.now() - started < limitMs) {
      await restarting;
      const outcome = await send(server.url, request);
      if (outcome.status === 200) return performance.now() - started;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    return Number.POSITIVE_INFINITY;
  }

  /** Runs traffic while `fault` runs, then restores the proxy and measures the recovery. */
  async function phase(name: string, fault: { start: () => Promise<void>; stop: () => Promise<void> }): Promise<PhaseFigures> {
    if ((await timeToServe(30_000)) === Number.POSITIVE_INFINITY) {
      // only a version without deadlines gets here (its figures are then printed, and the phase before failed)
      console.log(`the server does not serve before the ${name} phase: started again`);
      replaced++;
      stopped.add(server);
      await server.stop();
      server = await startProcess(process.execPath, ["--import", "tsx", "src/main.ts"], env(), { cwd: SERVER_ROOT, port });
      watch(server);
    }
    const crashesBefore = crashes;
    const outcomes: Array<Outcome & { wellFormed: boolean }> = [];
    const requests = trafficRequests(key);
    let running = true;
    const clients = Array.from({ length: CLIENTS }, async (_, i) => {
      let n = i;
      while (running) {
        await restarting;
        outcomes.push(await send(server.url, requests[n++ % requests.length]));
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    });
    await fault.start();
    await new Promise((resolve) => setTimeout(resolve, PHASE_MS));
    await fault.stop();
    const recoveryMs = await timeToServe(30_000);
    running = false;
    await Promise.all(clients);
    const statuses: Record<string, number> = {};
    for (const o of outcomes) statuses[String(o.status)] = (statuses[String(o.status)] ?? 0) + 1;
    const result: PhaseFigures = {
      phase: name,
      requests: outcomes.length,
      ok: outcomes.filter((o) => typeof o.status === "number" && o.status < 400).length,
      unavailable: outcomes.filter((o) => o.status === 503).length,
      serverErrors: outcomes.filter((o) => typeof o.status === "number" && o.status >= 500 && o.status !== 503).length,
      malformed: outcomes.filter((o) => o.status !== "no answer" && !o.wellFormed).length,
      slow: outcomes.filter((o) => o.ms > SLOW_MS).length,
      unanswered: outcomes.filter((o) => o.status === "no answer").length,
      maxMs: Math.max(0, ...outcomes.map((o) => o.ms)),
      slowest: outcomes.reduce((a, b) => (b.ms > a.ms ? b : a), { ms: 0, route: "" } as Outcome).route,
      crashes: crashes - crashesBefore,
      recoveryMs,
      statuses,
    };
    figures.push(result);
    console.log(`${name}: ${JSON.stringify(result)}`);
    return result;
  }

  function assertFigures(f: PhaseFigures) {
    // what the server logged of its 500s (a request id, then the stack)
    const internal = server.output().split(/\n(?=\S)/).filter((line) => /^request \S+: (?!service unavailable)/.test(line));
    const detail = `${JSON.stringify(f)}\n${crashLines.join("\n---\n")}\n${internal.slice(-3).join("\n")}`;
    assert.equal(f.crashes, 0, `the process never exits: ${detail}`);
    assert.equal(f.serverErrors, 0, `no 500: ${detail}`);
    assert.equal(f.unanswered, 0, `every request answers: ${detail}`);
    assert.equal(f.slow, 0, `no answer slower than ${SLOW_MS} ms: ${detail}`);
    assert.equal(f.malformed, 0, `every refusal is {error, code}, every 503 has Retry-After: ${detail}`);
    assert.ok(f.unavailable > 0, `the fault was felt (some 503s): ${detail}`);
    assert.ok(f.recoveryMs <= RECOVERY_MS, `serves again within ${RECOVERY_MS} ms of the database's return: ${detail}`);
  }

  test("terminate storm: pg_terminate_backend on the server's connections every 150-250 ms", async () => {
    const admin = postgres(ADMIN_URL, { max: 1, onnotice: () => {} });
    let storming = true;
    let storm: Promise<void> = Promise.resolve();
    const f = await phase("terminate", {
      start: async () => {
        storm = (async () => {
          while (storming) {
            await restarting; // a crashed server is started again undisturbed, so later figures are measured
            // only this suite's throwaway database: other engineers share the server
            await admin`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = ${databaseName} AND pid <> pg_backend_pid()`;
            await new Promise((resolve) => setTimeout(resolve, 150 + Math.random() * 100));
          }
        })();
      },
      stop: async () => {
        storming = false;
        await storm;
      },
    });
    await admin.end();
    assertFigures(f);
  });

  for (const mode of ["refuse", "blackhole", "drop"] as ProxyMode[]) {
    test(`${mode}: ${{ refuse: "the port refuses connections", blackhole: "no byte moves (a partition)", drop: "every connection is reset" }[mode as "refuse"]}`, async () => {
      const f = await phase(mode, {
        start: () => proxy.setMode(mode),
        stop: () => proxy.setMode("pass"),
      });
      assertFigures(f);
    });
  }
});
