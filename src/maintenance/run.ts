// Runs the maintenance tasks under their leases and reports what each did. No runtime APIs:
// src/main.ts decides when (Deno's cron or a timer), `admin maintain` runs them on demand.
import type { Log } from "../observe/log.ts";
import type { Db } from "../db/types.ts";
import type { Config } from "../config.ts";
import { acquireLease, taskStates, TASK_NAMES, type TaskName } from "./lease.ts";
import { recheckReachability, type ReachabilityReport } from "./reachability.ts";
import { materializeStats } from "./stats.ts";
import type { XUsersClient } from "../sources/x-users.ts";

const REACHABILITY_OFF_REASON = "X_API_URL and X_BEARER_TOKEN are not set";
export const REACHABILITY_OFF = `Maintenance: the reachability re-check is off (${REACHABILITY_OFF_REASON})`;

/** How long a run's lease lasts past its last sign of life; a dead run frees its task after this. */
export const LEASE_MS = 10 * 60_000;

export interface MaintenanceDeps {
  db: Db;
  now: () => Date;
  log: Log;
  /** The X API; undefined leaves the reachability re-check off. */
  x?: XUsersClient;
  reachabilityDailyLimit: number;
  sleep?: (ms: number) => Promise<void>;
  signal?: AbortSignal;
}

export type TaskReport =
  | ({ task: "reachability" } & ReachabilityReport)
  | { task: "stats"; status: "done"; as_of: string; total_wallets: number; wallets_checked: number }
  | { task: TaskName; status: "off" | "skipped" | "failed"; reason: string };

export function maintenanceDeps(
  config: Config,
  base: { db: Db; now: () => Date; log: Log; fetch?: typeof fetch; sleep?: (ms: number) => Promise<void>; signal?: AbortSignal },
): MaintenanceDeps {
  const { xApiUrl, xBearerToken } = config.upstreams;
  return {
    ...base,
    x: xApiUrl && xBearerToken ? { baseUrl: xApiUrl, bearerToken: xBearerToken, fetch: base.fetch } : undefined,
    reachabilityDailyLimit: config.maintenance.reachabilityDailyLimit,
  };
}

/** Resolves after `ms`, or at once when the signal aborts. */
function defaultSleep(signal?: AbortSignal): (ms: number) => Promise<void> {
  return (ms) =>
    new Promise((resolve) => {
      if (signal?.aborted) return resolve();
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        signal?.removeEventListener("abort", done);
        resolve();
      }
      signal?.addEventListener("abort", done, { once: true });
    });
}

/** Why a run did not get the lease: another run holds it, or (scheduled) the task is done. */
async function whySkipped(db: Db, task: TaskName, now: Date): Promise<string> {
  const state = (await taskStates(db)).find((s) => s.task === task);
  if (state?.lease_until && state.lease_until > now) {
    return `another run has held it since ${state.started_at?.toISOString()}`;
  }
  return `already done since ${state?.last_success_at?.toISOString()}`;
}

/**
 * Runs one task under its lease. `dueSince` makes it a scheduled run: skipped when the task
 * already succeeded at or after that time. A run that cannot get the lease reports `skipped`.
 */
export async function runTask(deps: MaintenanceDeps, task: TaskName, options: { dueSince?: Date } = {}): Promise<TaskReport> {
  if (task === "reachability" && !deps.x) {
    // a scheduled run says nothing: the scheduler said it once when it started (reachabilityOff)
    if (!options.dueSince) deps.log(REACHABILITY_OFF);
    return { task, status: "off", reason: REACHABILITY_OFF_REASON };
  }
  const now = deps.now();
  const lease = await acquireLease(deps.db, task, { now, until: new Date(now.getTime() + LEASE_MS), dueSince: options.dueSince });
  if (!lease) return { task, status: "skipped", reason: await whySkipped(deps.db, task, now) };

  let report: TaskReport;
  try {
    if (task === "stats") {
      const snapshot = await materializeStats(deps.db, { now });
      report = {
        task,
        status: "done",
        as_of: snapshot.asOf.toISOString(),
        total_wallets: snapshot.counts.total_wallets,
        wallets_checked: snapshot.counts.wallets_checked,
      };
    } else {
      report = {
        task,
        ...(await recheckReachability({
          db: deps.db,
          x: deps.x!,
          now: deps.now,
          dailyLimit: deps.reachabilityDailyLimit,
          sleep: deps.sleep ?? defaultSleep(deps.signal),
          keep: (until) => lease.renew(until),
          leaseMs: LEASE_MS,
          signal: deps.signal,
        })),
      };
    }
  } catch (error) {
    deps.log(`Maintenance: ${task} failed: ${(error as Error).message}`, "error");
    report = { task, status: "failed", reason: `${task} stopped on an internal error` };
  }
  // a release that fails (database gone) leaves the lease to expire: the task stays runnable
  await lease.release(report.status === "done", report).catch(() => {});
  deps.log(`Maintenance: ${JSON.stringify(report)}`);
  return report;
}

/** Runs the tasks one after another (reachability before stats, so the counts see its results). */
export async function runTasks(
  deps: MaintenanceDeps,
  tasks: readonly TaskName[] = TASK_NAMES,
  options: { dueSince?: Date } = {},
): Promise<TaskReport[]> {
  const reports: TaskReport[] = [];
  for (const task of TASK_NAMES.filter((t) => tasks.includes(t))) {
    if (deps.signal?.aborted) break;
    reports.push(await runTask(deps, task, options));
  }
  return reports;
}
