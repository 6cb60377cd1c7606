// POST /jobs and GET /jobs/{id}: submission (small lists run inline, larger ones go to the
// worker) and the free status poll with paged results read from the index at poll time.
import { Hono } from "hono";
import * as v from "valibot";
import { sql } from "../db/queries.ts";
import { buildViews, selectIdentityRows, type WalletView } from "../index/records.ts";
import { readCredits } from "../ledger/accounts.ts";
import { readWalletList } from "../http/body.ts";
import { ApiError, invalidAddress } from "../http/errors.ts";
import { refusal, requestMeterer, type Metered, type Meterer } from "../http/meter.ts";
import { batchRowJson } from "../http/render.ts";
import { createJob, INLINE_MAX } from "../jobs/submit.ts";
import { FAILED_JOB_MESSAGE, runJob, type JobRunDeps } from "../jobs/run.ts";
import { JobParams, JobPollResponse, JobQuery, JobSubmitResponse, WalletListBody } from "../http/schemas.ts";
import type { Operation } from "../openapi/operation.ts";
import { meterDeps, type RouteDeps } from "./deps.ts";

export const JOBS_ROUTE = "/v1/jobs";
export const JOB_ROUTE = "/v1/jobs/{id}";
/** 4.5 MiB: about 100,000 addresses. */
export const JOB_BODY_LIMIT = 4.5 * 1024 * 1024;
export const PAGE_LIMIT = 1000;

export const jobsOpenapi: Operation[] = [
  {
    method: "post",
    path: "/jobs",
    operationId: "submitJob",
    tag: "Async jobs",
    summary: "Submit a list for background resolution",
    description:
      "Any number of addresses (body at most 4.5 MiB, 4,718,592 bytes: about 100,000 addresses), deduplicated and lowercased; at most 10 times the available match credits. A job reads the index, then a cache of earlier live answers, then live sources, so it can find identities a batch reports as never seen. 10 addresses or fewer run inline and come back completed; more come back pending. One job per account may be pending or processing. Cost: nothing at submission; 1 match credit per address that resolves to twitter or farcaster, debited once at completion (failed jobs are free); rate weight 1 regardless of size.",
    auth: true,
    body: WalletListBody,
    success: { status: 202, description: "The job, with the URL to poll", schema: JobSubmitResponse },
    errors: [
      { status: 400, codes: ["INVALID_REQUEST", "INVALID_ADDRESS"] },
      { status: 402, codes: ["NO_CREDITS", "SUBMISSION_LIMIT_EXCEEDED"] },
      { status: 409, codes: ["JOB_ALREADY_ACTIVE"] },
      { status: 413, codes: ["INVALID_REQUEST"] },
    ],
  },
  {
    method: "get",
    path: "/jobs/{id}",
    operationId: "jobStatus",
    tag: "Async jobs",
    summary: "Poll a job and page its results",
    description:
      "Status, progress and timestamps; once completed, `wallets` and `results` pages aligned by position (read until `meta.next_offset` is null). Reachability and `twitter.also` are read at poll time. A job of another account is 404 exactly like an unknown id. Free on both meters; works at zero balance.",
    auth: true,
    params: JobParams,
    query: JobQuery,
    success: { status: 200, description: "The job, and a page of results once completed", schema: JobPollResponse },
    errors: [
      { status: 400, codes: ["INVALID_PARAMETER"] },
      { status: 404, codes: ["JOB_NOT_FOUND"] },
    ],
  },
];

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

function pageParameter(raw: string | undefined, name: string, fallback: number, max: number): number {
  if (raw === undefined) return fallback;
  if (Number(raw) > max || (name === "limit" && Number(raw) < 1)) {
    throw new ApiError(400, "INVALID_PARAMETER", `Invalid ${name}: use a whole number from ${name === "limit" ? 1 : 0} to ${max}`);
  }
  return Number(raw);
}

/** A job submission (distinct addresses, malformed entries): small lists run inline. */
export async function submitJob(
  deps: RouteDeps,
  jobs: JobRunDeps,
  meterer: Meterer,
  list: { unique: string[]; invalid: unknown[]; invalidCount: number },
) {
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

/** The poll of a job of the caller's account, with one page of results once completed. Free. */
export async function jobStatus(
  deps: RouteDeps,
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

/** Meters a job poll: free on both meters, works at zero balance. */
export function meterJobPoll(meterer: Meterer): Promise<Metered> {
  return meterer.meter({ route: JOB_ROUTE, weight: 0, needsCredits: false });
}

export function jobRoutes(deps: RouteDeps, jobs: JobRunDeps) {
  const app = new Hono();

  app.post("/jobs", async (c) => {
    const list = await readWalletList(c.req.raw, { maxBytes: JOB_BODY_LIMIT, label: "4.5 MiB" });
    const { data, submittedAt } = await submitJob(deps, jobs, requestMeterer(c, meterDeps(deps)), list);
    return c.json({ data, meta: { submitted_at: submittedAt.toISOString() } }, 202);
  });

  app.get("/jobs/:id", async (c) => {
    const m = await meterJobPoll(requestMeterer(c, meterDeps(deps)));
    const query = v.safeParse(JobQuery, { offset: c.req.query("offset"), limit: c.req.query("limit") });
    if (!query.success) {
      const name = query.issues[0].path?.[0].key;
      throw new ApiError(400, "INVALID_PARAMETER", `Invalid ${String(name)}: use a whole number from ${name === "limit" ? "1 to 1000" : "0"}`);
    }
    const offset = pageParameter(query.output.offset, "offset", 0, 1_000_000_000);
    const limit = pageParameter(query.output.limit, "limit", PAGE_LIMIT, PAGE_LIMIT);
    const { data, meta, page } = await jobStatus(deps, m, { id: c.req.param("id"), offset, limit });
    if (page) {
      data.wallets = page.wallets;
      data.results = page.wallets.map((address) => {
        const view = page.views.get(address);
        if (!view || !view.found) return null;
        const row = batchRowJson(view);
        return page.hideFollowers && row.farcaster ? { ...row, farcaster: { ...row.farcaster, followers: null } } : row;
      });
    }
    return c.json({ data, meta });
  });

  return app;
}

function jobActive(id: string): ApiError {
  return new ApiError(409, "JOB_ALREADY_ACTIVE", `Another job is already pending or processing on this account: ${id}; poll it until it finishes`);
}
