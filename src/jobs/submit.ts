// Creating a job: the row and its deduplicated wallets in one transaction, refused when the
// account already has a pending or processing job.
import type { Db } from "../db/types.ts";
import { sql } from "../db/queries.ts";
import { settleAll } from "../db/settle.ts";

/** Jobs of this many unique addresses or fewer run inside the submitting request. */
export const INLINE_MAX = 10;
/** Addresses a row of job_wallet_slices holds (00013_job_slices.sql). */
const SLICE = 1000;
/** The channel a submission notifies and workers listen on, so a job starts without waiting for a poll. */
export const JOBS_CHANNEL = "walletid_jobs";

export type CreateJobResult = { ok: true; jobId: string } | { ok: false; activeJobId: string };

export async function createJob(
  db: Db,
  params: {
    accountId: string;
    keyId: string;
    wallets: string[];
    now: Date;
    /** Set for a job run inline: it starts claimed by the request, with a lease like a worker's. */
    inline?: { owner: string; leaseSeconds: number };
  },
): Promise<CreateJobResult> {
  const jobId = crypto.randomUUID();
  return await db.transaction(async (tx) => {
    const inline = params.inline;
    const inserted = await tx.query(sql("jobs_insert"), [
      jobId,
      params.accountId,
      params.keyId,
      inline ? "processing" : "pending",
      params.wallets.length,
      params.now,
      inline ? params.now : null,
      inline?.owner ?? null,
      inline ? new Date(params.now.getTime() + inline.leaseSeconds * 1000) : null,
      inline ? 1 : 0,
    ]);
    if (inserted.length === 0) {
      const [active] = await tx.query<{ id: string }>(sql("jobs_select_active_by_account"), [params.accountId]);
      return { ok: false, activeJobId: active?.id ?? "unknown" };
    }
    // sent together (pipelined), and both awaited before the commit; a job run inline needs no worker
    const statements = [tx.query(sql("job_wallet_slices_insert"), [jobId, params.wallets, SLICE])];
    if (!inline) statements.push(tx.query(sql("jobs_notify"), [JOBS_CHANNEL]));
    await settleAll(statements);
    return { ok: true, jobId };
  });
}
