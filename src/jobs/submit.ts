// Creating a job: the row and its deduplicated wallets in one transaction, refused when the
// account already has a pending or processing job.
import type { Db } from "../db/types.ts";
import { sql } from "../db/queries.ts";
import { settleAll } from "../db/settle.ts";

/** Jobs of this many unique addresses or fewer run inside the submitting request. */
export const INLINE_MAX = 10;
const INSERT_SLICE = 10_000;

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
    // the slices sent together (pipelined) and then awaited, every one of them, before the commit
    const slices: Promise<unknown>[] = [];
    for (let i = 0; i < params.wallets.length; i += INSERT_SLICE) {
      slices.push(tx.query(sql("job_wallets_insert_many"), [jobId, params.wallets.slice(i, i + INSERT_SLICE), i]));
    }
    await settleAll(slices);
    return { ok: true, jobId };
  });
}
