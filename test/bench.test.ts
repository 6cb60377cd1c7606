// What npm run bench reports beside req/s: the CPU time of a server process and of the PostgreSQL
// processes of the bench database over a window (not of other databases on the same server), and
// the acceptance targets it marks met or missed; and that it refuses a flag it cannot run.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { createPostgresDatabase, TEST_TIMEOUTS } from "./support/db.ts";
import { openDatabase } from "../src/db/open.ts";
import type { Db } from "../src/db/types.ts";
import { processCpuMicros, startCpuWindow } from "../bench/cpu.ts";
import { checkTargets, summarizeCase, type CaseSummary, type RoundFigures, type TargetFigures } from "../bench/report.ts";
import { ROOT } from "./support/process.ts";

// The CPU window reads /proc (Linux) and the processes of a PostgreSQL server, so it has no PGlite
// variant: PGlite runs inside the process itself.
describe("the bench's CPU window", { skip: !existsSync("/proc/self/stat") }, () => {
  const dbs: Array<{ db: Db; drop: () => Promise<void> }> = [];
  before(async () => {
    for (let i = 0; i < 2; i++) {
      const created = await createPostgresDatabase();
      dbs.push({ db: await openDatabase({ databaseUrl: created.url, max: 2, timeouts: TEST_TIMEOUTS }), drop: created.drop });
    }
  });
  after(async () => {
    for (const { db, drop } of dbs) {
      await db.close();
      await drop();
    }
  });

  /** Runs a CPU-bound statement in a transaction and returns the CPU its backend spent on it. */
  async function burn(db: Db, rows: number): Promise<number> {
    return await db.transaction(async (tx) => {
      // without JIT, whose compilation (about 100 ms a backend) is the same for any row count:
      // the CPU then grows with the rows, so the two backends' shares stay apart
      await tx.query("SET LOCAL jit = off");
      const [{ pid }] = await tx.query<{ pid: number }>("SELECT pg_backend_pid() AS pid");
      const before = processCpuMicros(pid)!;
      await tx.query("SELECT count(*) FROM generate_series(1, $1::integer) AS g WHERE g % 7 = 3", [rows]);
      return processCpuMicros(pid)! - before;
    });
  }

  test("counts the server process and the backends of its database, not those of another", async () => {
    const [ours, theirs] = dbs;
    const window = await startCpuWindow(ours.db, process.pid);
    // 200 ms of this process's own CPU time, however long the shared machine takes to give it
    const spun = process.cpuUsage();
    let spins = 0;
    while (process.cpuUsage(spun).user < 200_000) spins++;
    const [oursMicros, theirsMicros] = await Promise.all([burn(ours.db, 1_000_000), burn(theirs.db, 8_000_000)]);
    const cpu = await window.stop();

    assert.ok(spins > 0);
    // /proc counts in clock ticks (10 ms)
    assert.ok(cpu.serverMicros !== null && cpu.serverMicros >= 190_000, `server CPU ${cpu.serverMicros} µs after spinning for 200 ms of CPU`);
    assert.ok(oursMicros > 0 && theirsMicros > 2 * oursMicros, `backends spent ${oursMicros} and ${theirsMicros} µs`);
    assert.ok(cpu.postgresMicros !== null, "PostgreSQL CPU is known");
    assert.ok(cpu.postgresMicros >= oursMicros, `counted ${cpu.postgresMicros} µs, our backend alone spent ${oursMicros} µs`);
    assert.ok(
      cpu.postgresMicros < oursMicros + theirsMicros / 2,
      `counted ${cpu.postgresMicros} µs: the other database's ${theirsMicros} µs must not be in it (ours ${oursMicros} µs)`,
    );
  });
});

function round(rps: number, extra: Partial<RoundFigures> = {}): RoundFigures {
  return { rps, p50Ms: 5, p99Ms: 10, requests: rps * 10, failed: 0, statusCodes: {}, serverMicros: rps * 10 * 300, postgresMicros: rps * 10 * 100, ...extra };
}

function summary(id: string, rounds: RoundFigures[]): CaseSummary {
  return summarizeCase({ id, label: id, connections: 32, walletsPerRequest: 1 }, rounds);
}

describe("the bench's targets", () => {
  const verdicts = (cases: Record<string, CaseSummary>, more: Omit<TargetFigures, "cases">) =>
    Object.fromEntries(checkTargets({ cases, ...more }).map((c) => [c.target, c.met]));

  test("a ratio meets its target at the bound and misses just below it; CPU per request is shown beside it", () => {
    const checks = checkTargets({
      cases: { baseline: summary("baseline", [round(1000), round(1000)]), bare: summary("bare", [round(2000)]), metered: summary("metered", [round(800), round(800)]) },
    });
    const byTarget = Object.fromEntries(checks.map((c) => [c.target, c]));
    assert.equal(byTarget["metered single >= 0.8 of baseline"].met, true);
    // 300 + 100 µs a request in every case here, so the CPU ratio is 1
    assert.equal(byTarget["metered single >= 0.8 of baseline"].measured, "0.80 by req/s, 1.00 by CPU per request");
    assert.equal(byTarget["metered single >= 0.6 of bare"].met, false);
    assert.equal(byTarget["100 accounts >= 0.9 of 1 account"].met, null);
    assert.equal(byTarget["100 accounts >= 0.9 of 1 account"].measured, "not run");
  });

  test("req/s is the median of the rounds; CPU per request is over all requests of all rounds", () => {
    const s = summary("metered", [round(100), round(300, { serverMicros: 3000 * 600 }), round(200)]);
    assert.equal(s.rps, 200);
    assert.equal(s.requests, 6000);
    assert.equal(s.serverMicrosPerRequest, (1000 * 300 + 3000 * 600 + 2000 * 300) / 6000);
    assert.equal(s.postgresMicrosPerRequest, 100);
  });

  test("latency bounds, the job, MCP and the cost of logs and metrics", () => {
    const v = verdicts(
      {
        "batch-200-alone": summary("batch-200-alone", [round(40, { p50Ms: 24.9 })]),
        "reverse-1": summary("reverse-1", [round(50, { p99Ms: 20 })]),
        metered: summary("metered", [round(1000)]),
        "metered-quiet": summary("metered-quiet", [round(1000)]),
        "metered-observed": summary("metered-observed", [round(951)]),
      },
      { mcp: { ratio: 0.49 }, job: { walletsPerSecond: 10_000, workerPeakRssMb: null } },
    );
    assert.equal(v["batch of 200 p50 < 25 ms (1 connection)"], true);
    assert.equal(v["reverse page p99 < 20 ms (1 client)"], false);
    assert.equal(v["job >= 10,000 wallets/s"], true);
    // a peak that could not be read is not a peak under the bound
    assert.equal(v["job worker peak < 200 MB"], false);
    assert.equal(v["MCP >= 0.5 of REST"], false);
    assert.equal(v["access log and metrics cost <= 5%"], true);
  });

  test("a case that failed misses its targets rather than reading as not run", () => {
    const v = verdicts({}, { failed: ["job"] });
    assert.equal(v["job >= 10,000 wallets/s"], false);
    assert.equal(v["job worker peak < 200 MB"], false);
    assert.equal(v["MCP >= 0.5 of REST"], null);
  });
});

describe("npm run bench's flags", () => {
  /** `npm run bench -- <args>` as package.json runs it (tsx <entry>), without npm in between. */
  function runBench(args: string[]): Promise<{ code: number | null; stderr: string }> {
    const script: string = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")).scripts.bench;
    const [command, entry] = script.split(" ");
    assert.equal(command, "tsx", `npm run bench runs ${script}`);
    return new Promise((resolve) => {
      execFile(process.execPath, ["--import", "tsx", entry, ...args], { cwd: ROOT, timeout: 60_000 }, (err, _stdout, stderr) =>
        resolve({ code: err ? ((err as { code?: number }).code ?? null) : 0, stderr }),
      );
    });
  }

  // refused before the bench touches a database or starts a server
  test("an unknown --case is refused with one line naming the cases", async () => {
    const { code, stderr } = await runBench(["--case", "lookups"]);
    assert.equal(code, 1, stderr);
    assert.equal(stderr.trim(), 'Cannot run the bench: --case must be all, lookup, reverse, mcp, job, purchase, percall, hub, scale, events, not "lookups"');
  });
});
