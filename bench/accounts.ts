// The bench's accounts: on an unlimited custom plan, fully metered, each with credits to spare and
// one key.
import type { Db } from "../src/db/types.ts";
import { createAccount, grantCredits } from "../src/ledger/accounts.ts";
import { createApiKey } from "../src/ledger/keys.ts";

const BENCH_PLAN = "BenchCustom";

export interface BenchAccount {
  accountId: string;
  apiKey: string;
}

/** The custom plan: null limits never throttle, yet every window is still counted and every match debited. */
export async function ensureBenchPlan(db: Db): Promise<void> {
  await db.query(
    `INSERT INTO plans (name, rank, requests_per_minute, requests_per_day, requests_per_month, max_batch_size)
     VALUES ($1, 100, NULL, NULL, NULL, 1000)
     ON CONFLICT (name) DO UPDATE SET rank = 100, requests_per_minute = NULL, requests_per_day = NULL,
       requests_per_month = NULL, max_batch_size = 1000`,
    [BENCH_PLAN],
  );
}

/** One account on the custom plan (ensureBenchPlan first), with an Index pack of 40 and a key named `name`. */
export async function createBenchAccount(db: Db, name: string, now: Date): Promise<BenchAccount> {
  const { accountId } = await createAccount(db, { now });
  await db.query("UPDATE accounts SET plan_override = $2 WHERE id = $1", [accountId, BENCH_PLAN]);
  const grant = await grantCredits(db, { accountId, pack: "Index", quantity: 40, grantKey: name, now });
  if (!grant.granted) throw new Error("Cannot set up the bench accounts: the credit grant was not written");
  const key = await createApiKey(db, { accountId, name, now });
  if (!key.ok) throw new Error(`Cannot set up the bench accounts: ${key.code}`);
  return { accountId, apiKey: key.apiKey };
}
