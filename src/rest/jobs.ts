// POST /jobs and GET /jobs/{id}: submission (small lists run inline, larger ones go to the
// worker) and the free status poll with paged results read from the index at poll time.
import { Hono } from "hono";
import * as v from "valibot";
import { readWalletList } from "../http/body.ts";
import { ApiError } from "../http/errors.ts";
import { refusal } from "../http/meter.ts";
import { requestMeterer } from "../http/request-meter.ts";
import { batchRowJson } from "../http/render.ts";
import { JobParams, JobPollResponse, JobQuery, JobSubmitResponse, WalletListBody } from "../http/schemas.ts";
import type { Operation } from "../openapi/operation.ts";
import { meterDeps, type OperationDeps } from "../operations/deps.ts";
import { JOB_ROUTE, readJob, submitJob } from "../operations/jobs.ts";

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

function pageParameter(raw: string | undefined, name: string, fallback: number, max: number): number | ApiError {
  if (raw === undefined) return fallback;
  if (Number(raw) > max || (name === "limit" && Number(raw) < 1)) {
    return new ApiError(400, "INVALID_PARAMETER", `Invalid ${name}: use a whole number from ${name === "limit" ? 1 : 0} to ${max}`);
  }
  return Number(raw);
}

/** The page a poll asks for (`offset` and `limit` as sent), or why it cannot be read. */
function pageOf(rawOffset: string | undefined, rawLimit: string | undefined): { offset: number; limit: number } | ApiError {
  const query = v.safeParse(JobQuery, { offset: rawOffset, limit: rawLimit });
  if (!query.success) {
    const name = query.issues[0].path?.[0].key;
    return new ApiError(400, "INVALID_PARAMETER", `Invalid ${String(name)}: use a whole number from ${name === "limit" ? "1 to 1000" : "0"}`);
  }
  const offset = pageParameter(query.output.offset, "offset", 0, 1_000_000_000);
  if (offset instanceof ApiError) return offset;
  const limit = pageParameter(query.output.limit, "limit", PAGE_LIMIT, PAGE_LIMIT);
  if (limit instanceof ApiError) return limit;
  return { offset, limit };
}

export function jobRoutes(deps: OperationDeps) {
  const app = new Hono();

  app.post("/jobs", async (c) => {
    const list = await readWalletList(c.req.raw, { maxBytes: JOB_BODY_LIMIT, label: "4.5 MiB" });
    const submitted = await submitJob(deps, requestMeterer(c, meterDeps(deps)), list);
    if (!submitted.ok) throw submitted.refusal;
    return c.json({ data: submitted.data, meta: { submitted_at: submitted.submittedAt.toISOString() } }, 202);
  });

  app.get("/jobs/:id", async (c) => {
    const meterer = requestMeterer(c, meterDeps(deps));
    const wanted = pageOf(c.req.query("offset"), c.req.query("limit"));
    // a bad page is refused once the key is known, free, with the rate-limit headers
    if (wanted instanceof ApiError) throw await refusal(meterer, JOB_ROUTE, wanted);
    const read = await readJob(deps, meterer, { id: c.req.param("id"), ...wanted });
    if (!read.ok) throw read.refusal;
    const { data, meta, page } = read;
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
