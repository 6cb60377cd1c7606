// wallet.changed: every writer of the index (an import, a job's chunk, the reachability pass, a
// hub ingester) calls changedWallets() in its own transaction, after its writes. Triggers have
// marked the watched wallets its statements touched (00022_webhooks.sql); this pass compares only
// those with their last snapshot and writes one event per wallet and watching account.
import type { Db } from "../db/types.ts";
import { sql } from "../db/queries.ts";
import { buildViews, selectIdentityRows, type WalletView } from "./records.ts";
import { walletRecordJson } from "./record-json.ts";

/** Who wrote the change: an import file, a job's live resolution, the daily maintenance, a Farcaster hub. */
export type ChangeCause = "import" | "job" | "maintenance" | "hub";

/** The fields a wallet.changed event compares, in the order a change lists them. */
export const WATCHED_FIELDS = ["twitter", "farcaster", "ens_name", "lens", "github", "reachability", "sources"] as const;
export type WatchedField = (typeof WATCHED_FIELDS)[number];

/** What of a record a change is about: the identity shown per kind, the twitter reachability, the evidence classes. */
export type WatchSummary = Record<WatchedField, string | string[] | null>;

/** The notification channel the delivery loops listen on (src/webhooks/deliver.ts). */
export const WEBHOOKS_CHANNEL = "walletid_webhooks";

/** A wallet's summary from its view (none: the index has never seen it). */
export function summarize(view: WalletView | undefined): WatchSummary {
  return {
    twitter: view?.twitter?.handle ?? null,
    farcaster: view?.farcaster?.username ?? null,
    ens_name: view?.ensName ?? null,
    lens: view?.lens ?? null,
    github: view?.github ?? null,
    reachability: view?.twitter?.reachability?.value ?? null,
    sources: view?.sources ?? [],
  };
}

function same(a: string | string[] | null, b: string | string[] | null): boolean {
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => x === b[i]);
  return a === b;
}

/** The current views of `wallets`, as a lookup builds them. */
async function viewsOf(db: Db, wallets: string[], now: Date): Promise<Map<string, WalletView>> {
  // staleness is not part of a record's JSON, so any window does
  return buildViews(await selectIdentityRows(db, wallets), { now, staleAfterDays: 30 });
}

/**
 * Snapshots the newly watched `wallets` as they are now, so that later changes are told against
 * this. A wallet someone else watches keeps the snapshot it has (it is current: every writer
 * compares before it commits).
 */
export async function snapshotWallets(db: Db, wallets: string[], now: Date): Promise<void> {
  if (wallets.length === 0) return;
  const views = await viewsOf(db, wallets, now);
  await db.query(sql("watch_snapshots_upsert_many"), [JSON.stringify(wallets.map((w) => [w, summarize(views.get(w))])), false]);
}

function eventBody(data: object, now: Date): string {
  return JSON.stringify({ type: "wallet.changed", timestamp: now.toISOString(), data });
}

/**
 * Compares the watched wallets this transaction's writes touched with their snapshots and writes
 * a wallet.changed event for each one that changed (watch_events_create bills and withholds).
 * Call inside the writer's transaction, after its writes. Returns the events written.
 */
export async function changedWallets(tx: Db, cause: ChangeCause, now: Date): Promise<number> {
  const dirty = await tx.query<{ wallet: string }>(sql("watch_dirty_take"));
  if (dirty.length === 0) return 0;
  const wallets = dirty.map((r) => r.wallet).sort();
  const snapshots = await tx.query<{ wallet: string; summary: WatchSummary }>(sql("watch_snapshots_select"), [wallets]);
  if (snapshots.length === 0) return 0;
  const views = await viewsOf(tx, snapshots.map((s) => s.wallet), now);

  // one JSON text each for the snapshots and the events: thousands of bodies are sent as one
  // parameter, which costs a fraction of the same strings in text arrays
  const snapshotsNow: Array<[string, WatchSummary]> = [];
  const events: Array<[string, string, string | null, boolean]> = [];
  for (const { wallet, summary: before } of snapshots) {
    const view = views.get(wallet);
    const after = summarize(view);
    const changes = WATCHED_FIELDS.filter((f) => !same(before[f] ?? null, after[f])).map((field) => ({ field, before: before[field] ?? null, after: after[field] }));
    if (changes.length === 0) continue;
    const record = view?.found ? walletRecordJson(view) : null;
    const billable = after.twitter !== null || after.farcaster !== null;
    snapshotsNow.push([wallet, after]);
    // only a billable event can be withheld (an account without credits gets its field names only)
    events.push([
      wallet,
      eventBody({ wallet, changes, record, cause }, now),
      billable ? eventBody({ wallet, changes: changes.map(({ field }) => ({ field })), cause, withheld: true }, now) : null,
      billable,
    ]);
  }
  if (events.length === 0) return 0;
  await tx.query(sql("watch_snapshots_upsert_many"), [JSON.stringify(snapshotsNow), true]);
  const [{ events: written }] = await tx.query<{ events: number }>(sql("watch_events_create"), [events.map(([wallet]) => wallet), JSON.stringify(events), now]);
  if (written > 0) await tx.query(sql("jobs_notify"), [WEBHOOKS_CHANNEL]);
  return written;
}
