// Jobs: a submission (small lists run inline, larger ones go to the worker) and the free poll, results
// read at poll time. Faces: POST /jobs, GET /jobs/{id}; MCP walletid_submit_job, walletid_job_status.
import * as v from "valibot";
import { sql } from "../db/queries.ts";
import { buildViews, selectIdentityRows, type WalletView } from "../index/records.ts";
import { readCredits } from "../ledger/accounts.ts";
import { ApiError, invalidAddress } from "../http/errors.ts";
import { refusal, type Metered, type Meterer } from "../http/meter.ts";
import { JobParams } from "../http/schemas.ts";
import { createJob, INLINE_MAX } from "../jobs/submit.ts";
import { FAILED_JOB_MESSAGE, runJob } from "../jobs/run.ts";
import type { WalletList } from "./batch.ts";
import type { OperationDeps } from "./deps.ts";
import { outcomeOf, type Outcome } from "./outcome.ts";

export const JOBS_ROUTE = "/v1/jobs";
export const JOB_ROUTE = "/v1/jobs/{id}";

type JobRow = {
  id: string;
  status: "pending" | "processing" | "completed" | "failed";
  total: number;
  processed: number;
  stage: string | null;
  matched: number | null;
  created_at: Date;
  started_at: Date | null;
  completed_at: Date | null;
};

const iso = (d: Date | null) => (d ? d.toISOString() : null);

function jobNotFound(): ApiError {
  return new ApiError(404, "JOB_NOT_FOUND", "Job not found: no job with this id belongs to your account");
}

export interface JobSubmission {
  data: { job_id: string; status: string; wallets: number; status_url: string };
  submittedAt: Date;
  metered: Metered;
}

/**
 * A job submission (distinct addresses, malformed entries): small lists run inline. Nothing is
 * billed now; the job bills at completion. Malformed entries are refused after authentication.
 */
export function submitJob(
  deps: OperationDeps,
  meterer: Meterer,
  list: Pick<WalletList, "unique" | "invalid" | "invalidCount">,
): Promise<Outcome<JobSubmission>> {
  return outcomeOf(() => submit(deps, meterer, list));
}

async function submit(deps: OperationDeps, meterer: Meterer, list: Pick<WalletList, "unique" | "invalid" | "invalidCount">) {
  const { jobs } = deps;
  const { unique, invalid, invalidCount } = list;
  // authenticated (and the balance read) before anything is counted: refusals cost nothing
  if (invalid.length > 0) throw await refusal(meterer, JOBS_ROUTE, invalidAddress(invalid, invalidCount));
  const checked = await meterer.meter({ route: JOBS_ROUTE, weight: 0, needsCredits: true, wallets: unique.length });
  if (!checked.unmetered && checked.available !== null && unique.length > 10 * checked.available) {
    const max = 10 * checked.available;
    throw new ApiError(
      402,
      "SUBMISSION_LIMIT_EXCEEDED",
      `Too many addresses for the credits available: ${unique.length} sent, the maximum is ${max} (10 times the ${checked.available} credits available); add credits or submit fewer`,
    );
  }
  const [active] = await deps.db.query<{ id: string }>(sql("jobs_select_active_by_account"), [checked.accountId]);
  if (active) throw jobActive(active.id);

  const metered = await meterer.meter({ route: JOBS_ROUTE, weight: 1, needsCredits: true, wallets: unique.length });
  const now = deps.now();
  const inline = unique.length <= INLINE_MAX ? { owner: `inline:${crypto.randomUUID()}`, leaseSeconds: jobs.settings.leaseSeconds } : undefined;
  const created = await createJob(deps.db, { accountId: metered.accountId, keyId: metered.keyId, wallets: unique, now, inline });
  if (!created.ok) throw jobActive(created.activeJobId);

  let status: string = inline ? "processing" : "pending";
  if (inline) {
    const outcome = await runJob(jobs, {
      id: created.jobId,
      accountId: metered.accountId,
      total: unique.length,
      processed: 0,
      stageStats: {},
      attempts: 1,
      stalledAttempts: 1,
      owner: inline.owner,
    });
    if (outcome === "completed" || outcome === "failed") status = outcome;
  }
  const data = {
    job_id: created.jobId,
    status,
    wallets: unique.length,
    status_url: `${deps.config.publicUrl}/api/v1/jobs/${created.jobId}`,
  };
  return { data, submittedAt: now, metered };
}

export interface JobStatus {
  /** status, progress and timestamps (and `error` of a failed job), as the poll shows them */
  data: Record<string, unknown>;
  meta: Record<string, unknown>;
  /** Once completed: a page of the job's addresses and their views (absent: not found). */
  page?: { wallets: string[]; views: Map<string, WalletView>; hideFollowers: boolean };
  metered: Metered;
}

/**
 * The poll of a job of the caller's account, with one page of results (`offset`, `limit` rows)
 * once completed. Free on both meters, works at zero balance; a job of another account is
 * refused exactly like an unknown id.
 */
export function readJob(
  deps: OperationDeps,
  meterer: Meterer,
  params: { id: string; offset: number; limit: number },
): Promise<Outcome<JobStatus>> {
  return outcomeOf(async () => {
    const metered = await meterer.meter({ route: JOB_ROUTE, weight: 0, needsCredits: false });
    return await jobStatus(deps, metered, params);
  });
}

async function jobStatus(
  deps: OperationDeps,
  metered: Metered,
  params: { id: string; offset: number; limit: number },
): Promise<JobStatus> {
  const { offset, limit } = params;
  const id = v.safeParse(JobParams, { id: params.id });
  if (!id.success) throw jobNotFound();
  const [job] = await deps.db.query<JobRow>(sql("jobs_select_for_account"), [id.output.id.toLowerCase(), metered.accountId]);
  if (!job) throw jobNotFound();

  const data: Record<string, unknown> = {
    job_id: job.id,
    status: job.status,
    progress: { processed: job.processed, total: job.total, stage: job.stage },
    created_at: iso(job.created_at),
    started_at: iso(job.started_at),
    completed_at: iso(job.completed_at),
  };
  const meta: Record<string, unknown> = { requested: job.total, matched: job.matched ?? 0 };
  if (job.status === "failed") data.error = FAILED_JOB_MESSAGE;
  if (job.status !== "completed") return { data, meta, metered };

  const now = deps.now();
  const wallets = (await deps.db.query<{ address: string }>(sql("job_wallet_slices_select_range"), [job.id, offset, limit])).map(
    (r) => r.address,
  );
  const [rows, credits] = await Promise.all([selectIdentityRows(deps.db, wallets), readCredits(deps.db, metered.accountId, now)]);
  const views = buildViews(rows, { now, staleAfterDays: deps.config.staleAfterDays });
  const found = wallets.filter((w) => views.get(w)?.found).length;
  Object.assign(meta, {
    found,
    not_found: wallets.length - found,
    offset,
    limit,
    next_offset: offset + wallets.length < job.total ? offset + wallets.length : null,
  });
  // accounts on the free allowance see farcaster accounts without their follower counts
  return { data, meta, page: { wallets, views, hideFollowers: !metered.unmetered && credits.onFreeAllowance }, metered };
}

function jobActive(id: string): ApiError {
  return new ApiError(409, "JOB_ALREADY_ACTIVE", `Another job is already pending or processing on this account: ${id}; poll it until it finishes`);
}
