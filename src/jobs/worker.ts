// The job worker: claims jobs from the database with row locks (SKIP LOCKED) and a lease that
// expires, so workers in several processes share the queue and a job whose worker died is
// taken over and resumed from its last checkpoint.
import { sql } from "../db/queries.ts";
import { JOBS_CHANNEL } from "./submit.ts";
import { failJob, flushReverseEntries, runJob, type ClaimedJob, type JobOutcome, type JobRunDeps, type StageStats } from "./run.ts";

/**
 * A job whose attempts made no progress this many times in a row (the checkpoint never moved)
 * is failed rather than retried forever; attempts that checkpoint do not count.
 */
export const MAX_ATTEMPTS = 5;

export interface Worker {
  readonly owner: string;
  /** Claims and runs one job; null when there was nothing to claim. */
  runOnce(): Promise<{ jobId: string; outcome: JobOutcome } | null>;
  /**
   * Runs jobs until stop(): a submission's notification wakes it at once, and it polls every idleMs
   * while the queue is empty all the same (a notification can be missed: a reconnect, a driver
   * that cannot listen). Resolves once it listens, before its first claim.
   */
  start(): Promise<void>;
  /** Stops after the current chunk: the job stays claimed until its lease runs out. */
  stop(): Promise<void>;
}

type ClaimRow = {
  id: string;
  account_id: string;
  total: number;
  processed: number;
  stage_stats: StageStats;
  attempts: number;
  stalled_attempts: number;
};

export async function claimJob(deps: JobRunDeps, owner: string): Promise<ClaimedJob | null> {
  const [row] = await deps.db.query<ClaimRow>(sql("jobs_claim_next"), [owner, deps.now(), deps.settings.leaseSeconds]);
  if (!row) return null;
  return {
    id: row.id,
    accountId: row.account_id,
    total: row.total,
    processed: row.processed,
    stageStats: row.stage_stats,
    attempts: row.attempts,
    stalledAttempts: row.stalled_attempts,
    owner,
  };
}

export function createWorker(deps: JobRunDeps & { idleMs?: number; owner?: string }): Worker {
  const owner = deps.owner ?? `worker:${crypto.randomUUID()}`;
  const idleMs = deps.idleMs ?? 500;
  let stopping = false;
  let loop: Promise<void> | undefined;
  let wake: (() => void) | undefined;
  // set by a notification, so that one arriving during a claim that found nothing is not lost
  let notified = false;

  async function runOnce() {
    const job = await claimJob(deps, owner);
    if (!job) return null;
    if (job.stalledAttempts > MAX_ATTEMPTS) {
      deps.log(`job ${job.id}: ${MAX_ATTEMPTS} attempts made no progress at ${job.processed}/${job.total}; failing it`, "warn");
      await flushReverseEntries(deps.db, job.id);
      await failJob(deps, job, `gave up after ${MAX_ATTEMPTS} attempts without progress at ${job.processed}/${job.total}`);
      return { jobId: job.id, outcome: "failed" as const };
    }
    if (job.processed > 0) deps.log(`job ${job.id}: resuming at ${job.processed}/${job.total} (attempt ${job.attempts})`);
    const outcome = await runJob(deps, job, { shouldStop: () => stopping });
    // stopped between chunks (shutdown): the lease ends now, so another worker resumes at once
    if (outcome === "stopped") {
      await deps.db.query(sql("jobs_release"), [job.id, owner, deps.now()]).catch((err: Error) =>
        deps.log(`job ${job.id}: cannot release its lease (${err.message}); it resumes when the lease runs out`, "warn"),
      );
    }
    return { jobId: job.id, outcome };
  }

  async function listen() {
    try {
      return await deps.db.listen?.(JOBS_CHANNEL, () => {
        notified = true;
        wake?.();
      });
    } catch (err) {
      deps.log(`job worker: cannot listen for new jobs (${(err as Error).message}); polling every ${idleMs} ms`, "warn");
      return undefined;
    }
  }

  async function run(unlisten: (() => Promise<void>) | undefined) {
    while (!stopping) {
      let ran = false;
      notified = false;
      try {
        ran = (await runOnce()) !== null;
      } catch (err) {
        // the database or a bug: the job keeps its lease until it expires, then is claimed again
        deps.log(`job worker: ${(err as Error).stack ?? String(err)}`, "error");
      }
      if (!ran && !stopping && !notified) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, idleMs);
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        wake = undefined;
      }
    }
    await unlisten?.().catch(() => {});
  }

  return {
    owner,
    runOnce,
    async start() {
      if (loop) return;
      const listening = listen();
      loop = listening.then(run);
      await listening;
    },
    async stop() {
      stopping = true;
      wake?.();
      await loop;
    },
  };
}
