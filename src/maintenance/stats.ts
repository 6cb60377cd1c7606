// Stats materialization: the counts of the stats resource, computed in SQL and stored with the
// time they were taken; /stats only ever reads the stored row.
import type { Db } from "../db/types.ts";
import { sql } from "../db/queries.ts";

export interface StatsCounts {
  total_wallets: number;
  wallets_checked: number;
  twitter: number;
  farcaster: number;
  ens: number;
  lens: number;
  github: number;
  avg_followers: number;
  max_followers: number;
}

export interface StatsSnapshot {
  counts: StatsCounts;
  asOf: Date;
}

/** Counts the index now and stores the result as the row of now's UTC day. */
export async function materializeStats(db: Db, options: { now: Date }): Promise<StatsSnapshot> {
  const day = options.now.toISOString().slice(0, 10);
  // counting the whole index may take longer than a request's statement is allowed
  const [row] = await db.transaction(
    (tx) => tx.query<{ counts: StatsCounts; as_of: Date }>(sql("stats_snapshots_upsert_counts"), [day, options.now]),
    { bulk: true },
  );
  return { counts: row.counts, asOf: row.as_of };
}

export async function latestStats(db: Db): Promise<StatsSnapshot | undefined> {
  const [row] = await db.query<{ counts: StatsCounts; as_of: Date }>(sql("stats_snapshots_select_latest"));
  return row ? { counts: row.counts, asOf: row.as_of } : undefined;
}
