// When the maintenance tasks run, as plain functions of the time: a daily slot (MAINTENANCE_AT,
// UTC) and an hourly tick at the slot's minute. Each tick runs the tasks that have not succeeded
// since the latest slot, so the day's run happens once across instances, a failed or stopped run
// is tried again the next hour, and a task that never ran runs at the first tick after start.
import { runTasks, type MaintenanceDeps, type TaskReport } from "./run.ts";

export interface DailyAt {
  hour: number;
  minute: number;
}

const HOUR_MS = 3_600_000;

/** The latest daily slot at or before `now`. */
export function latestSlot(now: Date, at: DailyAt): Date {
  const slot = new Date(now);
  slot.setUTCHours(at.hour, at.minute, 0, 0);
  if (slot > now) slot.setUTCDate(slot.getUTCDate() - 1);
  return slot;
}

/** The next hourly tick strictly after `now`: minute `at.minute` of some hour. */
export function nextTick(now: Date, at: DailyAt): Date {
  const tick = new Date(now);
  tick.setUTCMinutes(at.minute, 0, 0);
  while (tick <= now) tick.setTime(tick.getTime() + HOUR_MS);
  return tick;
}

/** The tick as a cron expression (for Deno's cron), hourly at the slot's minute. */
export function tickCron(at: DailyAt): string {
  return `${at.minute} * * * *`;
}

/** One tick: runs every task that has not succeeded since the latest slot. */
export async function runDueTasks(deps: MaintenanceDeps, at: DailyAt): Promise<TaskReport[]> {
  return await runTasks(deps, undefined, { dueSince: latestSlot(deps.now(), at) });
}
