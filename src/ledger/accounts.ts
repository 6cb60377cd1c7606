// Accounts and the credits granted to them; balances are always read back from the ledger.
import type { Db } from "../db/types.ts";
import { sql } from "../db/queries.ts";

export const PACK_NAMES = ["Agent", "Scale", "Index"] as const;
export type PackName = (typeof PACK_NAMES)[number];

export async function createAccount(
  db: Db,
  params: { email?: string; hasAccount?: boolean; now: Date },
): Promise<{ accountId: string }> {
  const accountId = crypto.randomUUID();
  // an email signup is what earns the free allowance
  await db.query(sql("accounts_insert"), [
    accountId,
    params.email ?? null,
    params.email !== undefined,
    params.hasAccount ?? true,
    params.now,
  ]);
  return { accountId };
}

export interface Credits {
  available: number;
  packAvailable: number;
  onFreeAllowance: boolean;
  freeResetsAt: Date | null;
  plan: string;
}

export async function readCredits(db: Db, accountId: string, now: Date): Promise<Credits> {
  const [row] = await db.query<{
    available: number;
    pack_available: number;
    on_free_allowance: boolean;
    free_resets_at: Date | null;
    plan: string;
  }>(sql("account_credits_select"), [accountId, now]);
  return {
    available: row.available,
    packAvailable: row.pack_available,
    onFreeAllowance: row.on_free_allowance,
    freeResetsAt: row.free_resets_at,
    plan: row.plan,
  };
}

/**
 * Grants `quantity` packs. `grantKey` names what caused the grant: the same key twice grants once.
 * Returns whether this call granted, and the balance after it.
 */
export async function grantCredits(
  db: Db,
  params: { accountId: string; pack: PackName; quantity: number; grantKey: string; now: Date },
): Promise<{ granted: boolean; credits: Credits }> {
  const rows = await db.query(sql("credit_grants_insert"), [
    params.accountId,
    params.quantity,
    params.now,
    params.grantKey,
    params.pack,
  ]);
  return { granted: rows.length > 0, credits: await readCredits(db, params.accountId, params.now) };
}
