// The daily reachability re-check: a bounded number of twitter handles a UTC day, never-checked
// first and then the oldest check first, looked up against the X API 100 at a time. Each call's
// results and its share of the daily count are stored in one transaction, so a run stopped at
// any point keeps what it did and the next run goes on from there.
import { changedWallets } from "../index/changes.ts";
import type { Db } from "../db/types.ts";
import { sql } from "../db/queries.ts";
import { lookupUsers, X_USERS_PER_CALL, type LookupOutcome, type RateLimit, type XUsersClient } from "../sources/x-users.ts";

/** The longest wait for an X rate window to reset (its windows are 15 minutes) before stopping. */
export const MAX_RATE_LIMIT_WAIT_MS = 16 * 60_000;
/** Used when a 429 carries no x-rate-limit-reset. */
const DEFAULT_RATE_LIMIT_WAIT_MS = 60_000;
/** Consecutive 429s on one call before the run stops. */
const MAX_RATE_LIMITED_TRIES = 3;
/** Back-off before each retry of a call that failed with a 5xx or no answer. */
const FAILURE_BACKOFF_MS = [2_000, 8_000];

export interface ReachabilityDeps {
  db: Db;
  x: XUsersClient;
  now: () => Date;
  dailyLimit: number;
  sleep: (ms: number) => Promise<void>;
  /** Keeps the run's lease until the given time; false when it was lost. */
  keep: (until: Date) => Promise<boolean>;
  /** The lease length beyond any wait. */
  leaseMs: number;
  signal?: AbortSignal;
}

export interface ReachabilityReport {
  status: "done" | "partial" | "failed";
  /** handles looked up by this run */
  checked: number;
  live: number;
  suspended: number;
  deactivated: number;
  /** looked up, but the answer said nothing about reachability: left as they were */
  unresolved: number;
  /** handles looked up today, this run included, against `daily_limit` */
  checked_today: number;
  daily_limit: number;
  /** why a run stopped early */
  reason?: string;
}

type Stop = { stop: string; failed: boolean };

function startOfUtcDay(at: Date): Date {
  return new Date(`${at.toISOString().slice(0, 10)}T00:00:00.000Z`);
}

/** Waits for the X rate window to reset, holding the lease meanwhile; a Stop when it is too far off. */
async function waitForReset(deps: ReachabilityDeps, rateLimit: RateLimit): Promise<Stop | undefined> {
  const now = deps.now().getTime();
  const waitMs = rateLimit.resetAt ? Math.max(1_000, rateLimit.resetAt.getTime() - now + 1_000) : DEFAULT_RATE_LIMIT_WAIT_MS;
  if (waitMs > MAX_RATE_LIMIT_WAIT_MS) {
    return { stop: `X API rate limit resets at ${rateLimit.resetAt!.toISOString()}, too far off to wait`, failed: false };
  }
  if (!(await deps.keep(new Date(now + waitMs + deps.leaseMs)))) return { stop: "the run lost its lease", failed: true };
  await deps.sleep(waitMs);
  return deps.signal?.aborted ? { stop: "stopped by shutdown", failed: false } : undefined;
}

/** One call with its retries: rate-limited calls wait for the reset, failing ones back off. */
async function lookupWithRetries(deps: ReachabilityDeps, handles: string[]): Promise<Extract<LookupOutcome, { ok: true }> | Stop> {
  let rateLimited = 0;
  let failures = 0;
  for (;;) {
    const outcome = await lookupUsers(deps.x, handles);
    if (outcome.ok) return outcome;
    if (outcome.reason === "rate-limited") {
      if (++rateLimited >= MAX_RATE_LIMITED_TRIES) return { stop: "X API kept answering 429", failed: false };
      const stopped = await waitForReset(deps, outcome.rateLimit);
      if (stopped) return stopped;
      continue;
    }
    // a 4xx other than 429 (a bad token, say) will not get better by retrying
    const retryable = outcome.status === 0 || outcome.status >= 500;
    if (!retryable || failures >= FAILURE_BACKOFF_MS.length) return { stop: outcome.message, failed: true };
    await deps.sleep(FAILURE_BACKOFF_MS[failures++]);
    if (deps.signal?.aborted) return { stop: "stopped by shutdown", failed: false };
  }
}

export async function recheckReachability(deps: ReachabilityDeps): Promise<ReachabilityReport> {
  const started = deps.now();
  const day = started.toISOString().slice(0, 10);
  const [{ checked: before }] = await deps.db.query<{ checked: number }>(sql("reachability_check_days_select"), [day]);
  const report: ReachabilityReport = {
    status: "done",
    checked: 0,
    live: 0,
    suspended: 0,
    deactivated: 0,
    unresolved: 0,
    checked_today: before,
    daily_limit: deps.dailyLimit,
  };
  const budget = Math.max(0, deps.dailyLimit - before);
  if (budget === 0) return report;
  const due = await deps.db.query<{ handle: string }>(sql("twitter_handles_select_due"), [budget, startOfUtcDay(started)]);
  const handles = due.map((r) => r.handle);

  for (let i = 0; i < handles.length; i += X_USERS_PER_CALL) {
    if (deps.signal?.aborted) return { ...report, status: "partial", reason: "stopped by shutdown" };
    const batch = handles.slice(i, i + X_USERS_PER_CALL);
    const outcome = await lookupWithRetries(deps, batch);
    if ("stop" in outcome) return { ...report, status: outcome.failed ? "failed" : "partial", reason: outcome.stop };

    const checkedAt = deps.now();
    const found = [...outcome.results];
    report.checked_today = await deps.db.transaction(async (tx) => {
      if (found.length > 0) {
        await tx.query(sql("twitter_reachability_upsert_many"), [found.map(([h]) => h), found.map(([, r]) => r), found.map(() => checkedAt)]);
        // watched wallets whose handle's reachability changed: their wallet.changed events
        await changedWallets(tx, "maintenance", checkedAt);
      }
      const [{ checked }] = await tx.query<{ checked: number }>(sql("reachability_check_days_add"), [day, batch.length]);
      return checked;
    });
    report.checked += batch.length;
    report.unresolved += outcome.unresolved.length;
    for (const [, reachability] of found) report[reachability] += 1;

    if (!(await deps.keep(new Date(deps.now().getTime() + deps.leaseMs)))) {
      return { ...report, status: "failed", reason: "the run lost its lease" };
    }
    const more = i + X_USERS_PER_CALL < handles.length;
    if (more && outcome.rateLimit.remaining === 0) {
      const stopped = await waitForReset(deps, outcome.rateLimit);
      if (stopped) return { ...report, status: stopped.failed ? "failed" : "partial", reason: stopped.stop };
    }
  }
  return report;
}
