// CPU time over one measured window of the bench, from /proc: the server process a case drives
// and the PostgreSQL processes working for the bench database. On a shared machine CPU time per
// request is steadier than requests per second, which other people's work slows down.
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import type { Db } from "../src/db/types.ts";

const TICKS_PER_SECOND = readTicksPerSecond();

function readTicksPerSecond(): number {
  try {
    return Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
  } catch {
    return 100;
  }
}

/** utime + stime of a process in microseconds; undefined when it is gone (or there is no /proc). */
export function processCpuMicros(pid: number): number | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return undefined;
  }
  // the command name (field 2) may hold spaces and parentheses: count fields after its last ")",
  // where the state (field 3) comes first, so utime (14) and stime (15) are the 12th and 13th
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return ((Number(fields[11]) + Number(fields[12])) * 1e6) / TICKS_PER_SECOND;
}

/** Every process named postgres (the postmaster, its helpers and the backends), with its CPU time. */
function postgresProcesses(): Map<number, number> {
  const found = new Map<number, number>();
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return found;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    try {
      if (readFileSync(`/proc/${pid}/comm`, "utf8").trim() !== "postgres") continue;
    } catch {
      continue;
    }
    const micros = processCpuMicros(pid);
    if (micros !== undefined) found.set(pid, micros);
  }
  return found;
}

/**
 * Which PostgreSQL processes count for the bench: backends of its database and the shared helpers
 * (checkpointer, WAL writer, ...). Backends of other databases are the tests and benches of other
 * people on the machine. (This query runs before the window opens and after it closes.)
 */
async function classifyPostgres(db: Db): Promise<Map<number, boolean>> {
  const rows = await db.query<{ pid: number; counts: boolean }>(
    "SELECT pid, datname IS NULL OR datname = current_database() AS counts FROM pg_stat_activity",
  );
  return new Map(rows.map((r) => [Number(r.pid), r.counts]));
}

export interface CpuFigures {
  /** CPU time of the server process over the window, in microseconds (null without /proc). */
  serverMicros: number | null;
  /** CPU time of the PostgreSQL processes that count for the bench, in microseconds (null without /proc). */
  postgresMicros: number | null;
}

export interface CpuWindow {
  stop(): Promise<CpuFigures>;
}

/**
 * Starts measuring the server process `serverPid` and PostgreSQL. A process that started inside
 * the window counts from zero; one that ended inside it is lost (the backends of the servers'
 * pools live for the whole run). The postmaster is in no pg_stat_activity row: a process there at
 * both ends that no row names counts.
 */
export async function startCpuWindow(db: Db, serverPid: number | undefined): Promise<CpuWindow> {
  const classStart = await classifyPostgres(db);
  const serverStart = serverPid === undefined ? undefined : processCpuMicros(serverPid);
  const postgresStart = postgresProcesses();
  return {
    async stop() {
      const serverEnd = serverPid === undefined ? undefined : processCpuMicros(serverPid);
      const postgresEnd = postgresProcesses();
      const classEnd = await classifyPostgres(db);
      let postgresMicros = 0;
      for (const [pid, micros] of postgresEnd) {
        const counts = classEnd.get(pid) ?? classStart.get(pid) ?? postgresStart.has(pid);
        if (counts) postgresMicros += micros - (postgresStart.get(pid) ?? 0);
      }
      return {
        serverMicros: serverStart === undefined || serverEnd === undefined ? null : serverEnd - serverStart,
        postgresMicros: postgresEnd.size === 0 ? null : postgresMicros,
      };
    },
  };
}
