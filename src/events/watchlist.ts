// An account's watchlist: the wallets whose changes it hears of as wallet.changed events.
import type { Db } from "../db/types.ts";
import { sql } from "../db/queries.ts";
import { snapshotWallets } from "../index/changes.ts";

/** Wallets one account may watch at most. */
export const WATCHLIST_MAX = 100_000;

export type WatchResult = { full: false; added: number; alreadyWatched: number; total: number } | { full: true; total: number };

/** Adds `wallets` (normalized, unique) to the account's watchlist, all or none when the list would overflow. */
export async function watchWallets(db: Db, accountId: string, wallets: string[], now: Date): Promise<WatchResult> {
  return await db.transaction(async (tx) => {
    await tx.query(sql("account_lock"), [accountId]);
    const [row] = await tx.query<{ added: number; fresh: number; before: number }>(sql("watched_wallets_insert_many"), [
      accountId,
      wallets,
      now,
      WATCHLIST_MAX,
    ]);
    if (row.fresh > 0 && row.added === 0) return { full: true, total: row.before };
    if (row.added > 0) await snapshotWallets(tx, wallets, now);
    return { full: false, added: row.added, alreadyWatched: wallets.length - row.added, total: row.before + row.added };
  });
}

/** Removes `wallets` from the account's watchlist; those it did not watch are ignored. */
export async function unwatchWallets(db: Db, accountId: string, wallets: string[]): Promise<{ removed: number; total: number }> {
  return await db.transaction(async (tx) => {
    await tx.query(sql("account_lock"), [accountId]);
    const [{ removed }] = await tx.query<{ removed: number }>(sql("watched_wallets_delete_many"), [accountId, wallets]);
    const [{ total }] = await tx.query<{ total: number }>(sql("watched_wallets_count"), [accountId]);
    return { removed, total };
  });
}

export interface WatchedPage {
  wallets: Array<{ wallet: string; added_at: string }>;
  total: number;
  /** The last row's position when there may be more. */
  next?: { at: string; wallet: string };
}

/** A page of the account's watchlist, in the order added, after `after`. */
export async function watchedPage(db: Db, accountId: string, after: { at: string; wallet: string } | undefined, limit: number): Promise<WatchedPage> {
  const [rows, [{ total }]] = await Promise.all([
    db.query<{ wallet: string; added_at: Date }>(sql("watched_wallets_select_page"), [accountId, after?.at ?? null, after?.wallet ?? null, limit + 1]),
    db.query<{ total: number }>(sql("watched_wallets_count"), [accountId]),
  ]);
  const page = rows.slice(0, limit).map((r) => ({ wallet: r.wallet, added_at: new Date(r.added_at).toISOString() }));
  const last = page.at(-1);
  return { wallets: page, total, next: rows.length > limit && last ? { at: last.added_at, wallet: last.wallet } : undefined };
}
