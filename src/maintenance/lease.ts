// The per-task lease in maintenance_runs: at most one run of a task at a time across every
// instance sharing the database, and a run that dies midway frees the task when its lease expires.
import type { Db } from "../db/types.ts";
import { sql } from "../db/queries.ts";

export const TASK_NAMES = ["reachability", "stats"] as const;
export type TaskName = (typeof TASK_NAMES)[number];

export interface Lease {
  task: TaskName;
  runId: string;
  /** Moves the lease to `until`; false when it was lost (expired and taken by another run). */
  renew(until: Date): Promise<boolean>;
  /** Ends the run; `done` marks the task done as of the run's start. */
  release(done: boolean, result: object): Promise<void>;
}

export interface TaskState {
  task: TaskName;
  holder: string | null;
  lease_until: Date | null;
  started_at: Date | null;
  last_success_at: Date | null;
  last_result: Record<string, unknown> | null;
}

export async function acquireLease(
  db: Db,
  task: TaskName,
  options: { now: Date; until: Date; dueSince?: Date },
): Promise<Lease | undefined> {
  const runId = crypto.randomUUID();
  const rows = await db.query(sql("maintenance_runs_acquire"), [task, runId, options.now, options.until, options.dueSince ?? null]);
  if (rows.length === 0) return undefined;
  return {
    task,
    runId,
    async renew(until) {
      return (await db.query(sql("maintenance_runs_renew"), [task, runId, until])).length > 0;
    },
    async release(done, result) {
      await db.query(sql("maintenance_runs_release"), [task, runId, done, JSON.stringify(result)]);
    },
  };
}

export async function taskStates(db: Db): Promise<TaskState[]> {
  return await db.query<TaskState & Record<string, unknown>>(sql("maintenance_runs_select"));
}
