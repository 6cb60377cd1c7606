// job.completed and job.failed: written by the transaction that ends the job (src/jobs/run.ts),
// so an ended job always has its event and an event always has its ended job.
import type { Db } from "../db/types.ts";
import { sql } from "../db/queries.ts";
import { WEBHOOKS_CHANNEL } from "../index/changes.ts";

/** Writes the event and its deliveries (none when no endpoint of the account subscribes to the type). */
export async function jobEvent(tx: Db, event: { jobId: string; type: "job.completed" | "job.failed"; now: Date; baseUrl: string }): Promise<void> {
  const deliveries = await tx.query(sql("webhook_events_insert_job"), [event.jobId, event.type, event.now, event.baseUrl]);
  if (deliveries.length > 0) await tx.query(sql("jobs_notify"), [WEBHOOKS_CHANNEL]);
}
