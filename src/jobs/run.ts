// Runs a claimed job chunk by chunk through the stages index, cache, live and onchain, writing
// what live sources find to the index, checkpointing after every chunk while the lease holds,
// and completing with one debit keyed on the job (complete_job) or failing with none. Chunks
// overlap: the next ones are read and resolved while the one before them is written.
import type { Log } from "../observe/log.ts";
import { metrics } from "../observe/metrics.ts";
import type { Db } from "../db/types.ts";
import { sql } from "../db/queries.ts";
import { settleAll } from "../db/settle.ts";
import { writeObservations } from "../index/import.ts";
import { jobEvent } from "../events/jobs.ts";
import { parseObservationFields, type Observation } from "../index/observations.ts";
import {
  STAGES,
  UpstreamError,
  withRetries,
  type LiveSource,
  type ObservationFields,
  type RetryOptions,
  type Stage,
} from "../sources/types.ts";

export interface JobSettings {
  leaseSeconds: number;
  chunkSize: number;
  cacheTtlHours: number;
  retry: RetryOptions;
}

export interface JobRunDeps {
  db: Db;
  now: () => Date;
  log: Log;
  sources: LiveSource[];
  settings: JobSettings;
  /** `{base_url}`, for the results_url of job.completed and job.failed events. */
  baseUrl: string;
}

/**
 * Per stage, summed over the chunks written by every run of the job: wallets that entered it and
 * time spent. `write` is the chunks' write transactions, which overlap the next chunks' stages.
 */
export type StageStats = Partial<Record<Stage | "write", { wallets: number; ms: number }>>;

export interface ClaimedJob {
  id: string;
  accountId: string;
  total: number;
  processed: number;
  stageStats: StageStats;
  attempts: number;
  /** This claim and those before it since the checkpoint last moved. */
  stalledAttempts: number;
  /** Who holds the lease: a worker, or the request running a small job inline. */
  owner: string;
}

export type JobOutcome = "completed" | "failed" | "lease_lost" | "stopped";

/** Thrown when the lease has passed to another worker. */
class LeaseLost extends Error {}

/** What a failed job says to its owner; the reason stays in jobs.failure and the log. */
export const FAILED_JOB_MESSAGE = "The job failed and nothing was billed: submit the list again as a new job";

const EMPTY_ROUTE = "live-check";

/**
 * Chunks read and resolved ahead of the one being written. With one, the write of a chunk waited
 * whenever the next chunk's stages ran longer than the write before it (an upstream answering late,
 * the worker collecting garbage, the machine busy elsewhere): the writes are the job's critical
 * path, and a second chunk in hand keeps them going back to back. Costs one more chunk's
 * observations in memory.
 */
const LOOKAHEAD = 2;

/** A chunk read and through every stage, waiting for its write. */
interface ResolvedChunk {
  at: number;
  addresses: string[];
  result: ChunkResult;
  /** Its stages' figures, added to the job's when it is written. */
  stats: StageStats;
}

/**
 * Brings reverse_entries up to date for the wallets the job's chunks wrote (they defer it, see
 * 00012_job_reverse.sql). Bulk: a large job's pass may take longer than one statement may.
 */
export async function flushReverseEntries(db: Db, jobId: string): Promise<void> {
  await db.transaction((tx) => settleAll([tx.query(sql("session_async_commit")), tx.query(sql("reverse_pending_flush"), [jobId])]), {
    bulk: true,
  });
}

export async function runJob(deps: JobRunDeps, job: ClaimedJob, options: { shouldStop?: () => boolean } = {}): Promise<JobOutcome> {
  const { db, settings } = deps;
  let processed = job.processed;
  const stats: StageStats = { ...job.stageStats };
  // the stage last started by a chunk being resolved, if any: what the job's row shows
  let stage: Stage | null = null;
  let resolving = 0;

  const held = (rows: unknown[]) => {
    if (rows.length === 0) throw new LeaseLost();
  };
  const count = (into: StageStats, name: Stage | "write", wallets: number, ms: number) => {
    const entry = (into[name] ??= { wallets: 0, ms: 0 });
    entry.wallets += wallets;
    entry.ms += ms;
  };
  // The stage is recorded (and the lease renewed) while the stage's work starts, not before it: a
  // lost lease is still found before anything is written, and both are settled before going on.
  // A chunk's stage figures join the job's when it is written: a chunk resolved ahead and dropped
  // (a stop, a lost lease) is resolved and counted again by whoever resumes.
  const timedInto = (chunkStats: StageStats): Timed => async (next, wallets, fn) => {
    stage = next;
    const started = performance.now();
    const [recorded, result] = await settleAll([
      db.query(sql("jobs_stage"), [job.id, job.owner, next, JSON.stringify(stats), deps.now(), settings.leaseSeconds]),
      fn(),
    ]);
    held(recorded);
    count(chunkStats, next, wallets, Math.round(performance.now() - started));
    metrics.workerWallets.inc({ stage: next }, wallets);
    return result;
  };

  const resolve = async (at: number): Promise<ResolvedChunk> => {
    const addresses = (
      await db.query<{ address: string }>(sql("job_wallet_slices_select_range"), [job.id, at, settings.chunkSize])
    ).map((r) => r.address);
    if (addresses.length === 0) throw new Error(`job ${job.id} has no wallets at position ${at}`);
    const chunkStats: StageStats = {};
    resolving++;
    try {
      const result = await resolveChunk(deps, addresses, timedInto(chunkStats));
      return { at, addresses, result, stats: chunkStats };
    } finally {
      if (--resolving === 0) stage = null;
    }
  };

  // One transaction: what the sources found, the cache, and the checkpoint, only while the lease
  // holds. Its statements are pipelined (sent without waiting for the answer before), in three
  // round trips: the chunk waits less on a worker busy resolving the next one.
  const write = async ({ at, addresses, result, stats: chunkStats }: ResolvedChunk) => {
    const started = performance.now();
    await db.transaction(async (tx) => {
      const statements: Promise<unknown>[] = [tx.query(sql("reverse_pending_defer"), [job.id]), tx.query(sql("session_async_commit"))];
      if (result.answers.length > 0) {
        const now = deps.now();
        statements.push(
          tx.query(sql("live_answers_upsert_many"), [
            result.answers.map((a) => a.source),
            result.answers.map((a) => a.address),
            result.answers.map((a) => a.found),
            result.answers.map(() => now),
          ]),
        );
      }
      if (result.observations.length > 0) statements.push(writeObservations(tx, result.observations, deps.now(), "job"));
      await settleAll(statements);
      for (const [name, s] of Object.entries(chunkStats)) count(stats, name as Stage, s.wallets, s.ms);
      count(stats, "write", addresses.length, Math.round(performance.now() - started));
      held(
        await tx.query(sql("jobs_checkpoint"), [
          job.id,
          job.owner,
          at + addresses.length,
          stage,
          JSON.stringify(stats),
          deps.now(),
          settings.leaseSeconds,
          result.unsettled,
          result.indexMatched,
        ]),
      );
    });
  };

  // the chunks being resolved while another is written, in job order; always settled before runJob
  // returns, so nothing they do (a stage checkpoint renewing the lease) lands after the job is given back
  const ahead: Array<Promise<ResolvedChunk>> = [];
  let nextAt = processed;
  // asked once before the first chunk and once per chunk taken for writing, as with one ahead
  let stopping = false;
  const fill = () => {
    while (!stopping && ahead.length < LOOKAHEAD && nextAt < job.total) {
      const chunk = resolve(nextAt);
      chunk.catch(() => {}); // awaited below; this only keeps a failure while a write runs from being unhandled
      ahead.push(chunk);
      nextAt = Math.min(nextAt + settings.chunkSize, job.total);
    }
  };
  const settleAhead = () => Promise.all(ahead.splice(0).map((chunk) => chunk.catch(() => {})));
  // What the written chunks queued for reverse_entries is refreshed behind them, one pass at a time
  // beside the pipeline, and once more before the job ends: a single pass at the end took 6.4 s of
  // 100,000 wallets' job on its own. A failed pass is left for the next one (the queue stays).
  let flushing: Promise<void> | undefined;
  const flushBehind = () => {
    flushing ??= flushReverseEntries(db, job.id)
      .catch((err: Error) => deps.log(`job ${job.id}: reverse entries are refreshed later (${err.message})`, "warn"))
      .finally(() => (flushing = undefined));
  };

  try {
    stopping = processed < job.total && (options.shouldStop?.() ?? false);
    fill();
    while (ahead.length > 0) {
      const ready = await ahead[0];
      ahead.shift();
      // on a stop the chunk in hand is written and those behind it are dropped, as they were before
      // there was more than one: a stop waits for one write, and they are resolved again on resume
      stopping = options.shouldStop?.() ?? false;
      if (stopping) await settleAhead();
      else fill();
      await write(ready);
      processed = ready.at + ready.addresses.length;
      flushBehind();
    }
    await flushing;
    if (processed < job.total) return "stopped";
    await flushReverseEntries(db, job.id);
    // the job.completed event is written with the completion, or not at all
    const done = await db.transaction(async (tx) => {
      const now = deps.now();
      const [row] = await tx.query<{ completed: boolean; matched: number | null }>(sql("jobs_complete"), [job.id, job.owner, now]);
      if (row.completed) await jobEvent(tx, { jobId: job.id, type: "job.completed", now, baseUrl: deps.baseUrl });
      return row;
    });
    if (!done.completed) return "lease_lost";
    deps.log(`job ${job.id}: completed, ${job.total} wallets, ${done.matched} matched (${JSON.stringify(stats)})`);
    return "completed";
  } catch (err) {
    await settleAhead();
    await flushing;
    if (err instanceof LeaseLost) {
      deps.log(`job ${job.id}: lease lost at ${processed}/${job.total}; another worker carries on`);
      return "lease_lost";
    }
    if (err instanceof UpstreamError) {
      deps.log(`job ${job.id}: failed at ${processed}/${job.total}: ${err.message}`, "warn");
      await flushReverseEntries(db, job.id);
      const failed = await failJob(deps, job, err.message);
      return failed ? "failed" : "lease_lost";
    }
    throw err;
  }
}

/**
 * Fails a job held by `job.owner` (nothing is debited) and writes its job.failed event in the same
 * transaction. `reason` is for operators and never sent. False: the lease was no longer held.
 */
export async function failJob(deps: JobRunDeps, job: { id: string; owner: string }, reason: string): Promise<boolean> {
  return await deps.db.transaction(async (tx) => {
    const now = deps.now();
    const failed = await tx.query(sql("jobs_fail"), [job.id, job.owner, reason, now]);
    if (failed.length === 0) return false;
    await jobEvent(tx, { jobId: job.id, type: "job.failed", now, baseUrl: deps.baseUrl });
    return true;
  });
}

interface ChunkResult {
  observations: Observation[];
  /** What each source answered about the wallets none of them found, for the cache. */
  answers: Array<{ source: string; address: string; found: boolean }>;
  /** Of the wallets the index stage settled, those with a twitter or farcaster identity. */
  indexMatched: number;
  /** The wallets the index stage did not settle: the checkpoint counts theirs after the write. */
  unsettled: string[];
}

type Timed = <T>(stage: Stage, wallets: number, fn: () => Promise<T>) => Promise<T>;

/** One chunk through every stage; nothing is written until the chunk's transaction. */
async function resolveChunk(deps: JobRunDeps, addresses: string[], timed: Timed): Promise<ChunkResult> {
  const { db, sources, settings } = deps;
  const result: ChunkResult = { observations: [], answers: [], indexMatched: 0, unsettled: [] };

  const inIndex = await timed("index", addresses.length, async () => {
    const rows = await db.query<{ wallet: string; matched: boolean }>(sql("links_select_found_wallets"), [addresses]);
    result.indexMatched = rows.filter((r) => r.matched).length;
    return new Set(rows.map((r) => r.wallet));
  });
  let rest = addresses.filter((a) => !inIndex.has(a));
  result.unsettled = rest;
  if (rest.length === 0 || sources.length === 0) return result;

  // fresh answers per wallet, by source: a wallet every source answered recently is settled
  const fresh = await timed("cache", rest.length, async () => {
    const since = new Date(deps.now().getTime() - settings.cacheTtlHours * 3_600_000);
    // both statements sent at once: the setting is in force before the lookup is planned
    const [, rows] = await db.transaction((tx) =>
      settleAll([
        tx.query(sql("session_custom_plans")),
        tx.query<{ source: string; address: string }>(sql("live_answers_select_fresh"), [rest, sources.map((s) => s.name), since]),
      ]),
    );
    const bySource = new Map<string, Set<string>>(sources.map((s) => [s.name, new Set()]));
    for (const row of rows) bySource.get(row.source)!.add(row.address);
    return bySource;
  });
  rest = rest.filter((a) => !sources.every((s) => fresh.get(s.name)!.has(a)));

  const foundByAny = new Set<string>();
  const asked = new Set<string>();
  const now = deps.now().toISOString();
  for (const stage of STAGES) {
    for (const source of sources.filter((s) => s.stage === stage)) {
      const ask = rest.filter((a) => !fresh.get(source.name)!.has(a));
      if (ask.length === 0) continue;
      const found = await timed(stage, ask.length, () => askSource(source, ask, settings.retry));
      for (const address of ask) {
        asked.add(address);
        let any = false;
        for (const fields of found.get(address) ?? []) {
          const parsed = parseObservationFields({ ...fields, wallet: address, observed_at: now }, 0);
          if (parsed.ok) {
            result.observations.push(parsed.observation);
            any = true;
          } else {
            deps.log(`live source ${source.name} answered an unusable observation for ${address}: ${parsed.error}`, "warn");
          }
        }
        if (any) foundByAny.add(address);
        result.answers.push({ source: source.name, address, found: any });
      }
    }
  }
  // Only the answers about wallets nobody found are kept for the cache: a wallet given an identity
  // here is in the index from this chunk's write on, and the index stage settles it before the
  // cache is read (nothing removes links), so its answers would never be read.
  result.answers = result.answers.filter((a) => !foundByAny.has(a.address));
  // checked with every live source and nothing attached: recorded as checked-empty, with its time
  for (const address of asked) {
    if (!foundByAny.has(address)) {
      const parsed = parseObservationFields({ wallet: address, kind: "empty", route: EMPTY_ROUTE, observed_at: now }, 0);
      if (parsed.ok) result.observations.push(parsed.observation);
    }
  }
  return result;
}

/** One call to a live source, counted by outcome for /metrics. */
async function counted(source: LiveSource, batch: string[]) {
  try {
    const answer = await source.resolve(batch);
    metrics.upstream.inc({ source: source.name, outcome: "ok" });
    return answer;
  } catch (err) {
    metrics.upstream.inc({ source: source.name, outcome: "error" });
    throw err;
  }
}

/** The addresses in the source's batch size, all batches at once, each retried with backoff. */
async function askSource(source: LiveSource, addresses: string[], retry: RetryOptions) {
  const batches: string[][] = [];
  for (let i = 0; i < addresses.length; i += source.batchSize) batches.push(addresses.slice(i, i + source.batchSize));
  const answers = await Promise.all(batches.map((batch) => withRetries(() => counted(source, batch), retry)));
  const merged = new Map<string, ObservationFields[]>();
  for (const answer of answers) for (const [address, fields] of answer) merged.set(address, fields);
  return merged;
}
