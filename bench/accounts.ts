// The bench's accounts: on an unlimited custom plan, fully metered, each with credits to spare and
// one key; and what they were metered for over a run.
import type { Db } from "../src/db/types.ts";
import { createAccount, grantCredits } from "../src/ledger/accounts.ts";
import { createApiKey } from "../src/ledger/keys.ts";

const BENCH_PLAN = "BenchCustom";

export interface BenchAccount {
  accountId: string;
  apiKey: string;
}

/** The custom plan: null limits never throttle, yet every window is still counted and every match debited. */
async function ensureBenchPlan(db: Db): Promise<void> {
  await db.query(
    `INSERT INTO plans (name, rank, requests_per_minute, requests_per_day, requests_per_month, max_batch_size)
     VALUES ($1, 100, NULL, NULL, NULL, 1000)
     ON CONFLICT (name) DO UPDATE SET rank = 100, requests_per_minute = NULL, requests_per_day = NULL,
       requests_per_month = NULL, max_batch_size = 1000`,
    [BENCH_PLAN],
  );
}

/** One account on the custom plan (ensureBenchPlan first), with an Index pack of 40 and a key named `name`. */
async function createBenchAccount(db: Db, name: string, now: Date): Promise<BenchAccount> {
  const { accountId } = await createAccount(db, { now });
  await db.query("UPDATE accounts SET plan_override = $2 WHERE id = $1", [accountId, BENCH_PLAN]);
  const grant = await grantCredits(db, { accountId, pack: "Index", quantity: 40, grantKey: name, now });
  if (!grant.granted) throw new Error("Cannot set up the bench accounts: the credit grant was not written");
  const key = await createApiKey(db, { accountId, name, now });
  if (!key.ok) throw new Error(`Cannot set up the bench accounts: ${key.code}`);
  return { accountId, apiKey: key.apiKey };
}

/**
 * A fresh ledger holding `count` accounts on an unlimited custom plan, fully metered, each with
 * credits to spare and one key.
 */
export async function createBenchAccounts(db: Db, count: number, now: Date): Promise<BenchAccount[]> {
  // every run meters against the same empty ledger (CASCADE reaches keys, grants, debits, windows, usage)
  await db.exec("TRUNCATE accounts CASCADE");
  await ensureBenchPlan(db);
  const accounts: BenchAccount[] = [];
  for (let i = 0; i < count; i++) accounts.push(await createBenchAccount(db, "bench", now));
  return accounts;
}

/** What all the bench accounts were metered for over the run. */
export async function readMetering(db: Db) {
  const [row] = await db.query<{ events: string; units: string; matches: string; debits: string; debited: string }>(
    `SELECT (SELECT coalesce(sum(requests), 0) FROM usage_counts) AS events,
            (SELECT coalesce(sum(units), 0) FROM usage_counts) AS units,
            (SELECT coalesce(sum(matches), 0) FROM usage_counts) AS matches,
            (SELECT count(DISTINCT call_key) FROM debits) AS debits,
            (SELECT coalesce(sum(matches), 0) FROM debits) AS debited`,
  );
  return {
    usageEvents: Number(row.events),
    rateUnits: Number(row.units),
    matchesReported: Number(row.matches),
    debitCalls: Number(row.debits),
    matchesDebited: Number(row.debited),
  };
}
