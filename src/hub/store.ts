// What the hub sync keeps in the database: its lease, where the backfill and the follower stand,
// and its writes to the index. Every farcaster observation from a hub goes through
// writeHubObservations, the same import path as NDJSON files (classification, reverse_entries).
import type { Db } from "../db/types.ts";
import { sql } from "../db/queries.ts";
import { changedWallets } from "../index/changes.ts";
import { writeObservations, type ImportCounts } from "../index/import.ts";
import { parseObservationFields, type Observation } from "../index/observations.ts";

/**
 * A page of fids or events writes thousands of rows, as an import file does: no statement timeout
 * (the lease bounds how long a page may take: a stuck one loses it and rolls back).
 */
const BULK = { bulk: true } as const;

/** The hub lease was lost (it expired and another process took it): stop at once. */
export class LeaseLost extends Error {
  constructor() {
    super("the hub lease was lost to another process");
  }
}

export interface SyncState {
  hubUrl: string | null;
  startEventId: bigint | null;
  backfillStartedAt: Date | null;
  backfillDoneAt: Date | null;
  lastEventId: bigint | null;
  headEventId: bigint | null;
  holder: string | null;
  leaseUntil: Date | null;
}

function bigOrNull(value: unknown): bigint | null {
  return value === null || value === undefined ? null : BigInt(value as string);
}

export async function readSync(db: Db): Promise<SyncState> {
  const [r] = await db.query<Record<string, unknown>>(sql("hub_sync_select"));
  return {
    hubUrl: (r.hub_url as string | null) ?? null,
    startEventId: bigOrNull(r.start_event_id),
    backfillStartedAt: (r.backfill_started_at as Date | null) ?? null,
    backfillDoneAt: (r.backfill_done_at as Date | null) ?? null,
    lastEventId: bigOrNull(r.last_event_id),
    headEventId: bigOrNull(r.head_event_id),
    holder: (r.holder as string | null) ?? null,
    leaseUntil: (r.lease_until as Date | null) ?? null,
  };
}

export interface HubLease {
  holder: string;
  /** Moves the lease forward; false when it was lost. */
  renew(): Promise<boolean>;
  /** Inside a transaction: renews, or throws LeaseLost so the transaction rolls back. */
  check(tx: Db): Promise<void>;
  release(): Promise<void>;
}

/** Takes the hub lease for `leaseMs`, or undefined while another process holds it. */
export async function acquireHubLease(db: Db, options: { now: () => Date; leaseMs: number }): Promise<HubLease | undefined> {
  const holder = crypto.randomUUID();
  const until = () => new Date(options.now().getTime() + options.leaseMs);
  const taken = await db.query(sql("hub_sync_acquire"), [holder, options.now(), until()]);
  if (taken.length === 0) return undefined;
  return {
    holder,
    async renew() {
      return (await db.query(sql("hub_sync_renew"), [holder, until()])).length > 0;
    },
    async check(tx) {
      if ((await tx.query(sql("hub_sync_renew"), [holder, until()])).length === 0) throw new LeaseLost();
    },
    async release() {
      await db.query(sql("hub_sync_release"), [holder]);
    },
  };
}

export async function startBackfill(db: Db, lease: HubLease, hubUrl: string, startEventId: bigint, now: Date): Promise<void> {
  const rows = await db.transaction(async (tx) => tx.query(sql("hub_sync_start_backfill"), [lease.holder, hubUrl, startEventId.toString(), now]));
  if (rows.length === 0) throw new LeaseLost();
}

export async function finishBackfill(db: Db, lease: HubLease, now: Date): Promise<bigint> {
  const [row] = await db.query<{ last_event_id: string | null }>(sql("hub_sync_finish_backfill"), [lease.holder, now]);
  if (!row) throw new LeaseLost();
  return BigInt(row.last_event_id ?? "0");
}

export interface ShardProgress {
  shard: number;
  pageToken: string;
  lastFid: number;
  fidsDone: number;
  done: boolean;
}

export async function shardProgress(db: Db, shards?: number[]): Promise<ShardProgress[]> {
  if (shards) await db.query(sql("hub_shards_ensure"), [shards]);
  const rows = await db.query<{ shard: number; page_token: string; last_fid: string; fids_done: string; done: boolean }>(sql("hub_shards_select"));
  return rows.map((r) => ({ shard: r.shard, pageToken: r.page_token, lastFid: Number(r.last_fid), fidsDone: Number(r.fids_done), done: r.done }));
}

/** One farcaster observation of a hub verification; undefined when the username is not one the index accepts. */
export function hubObservation(wallet: string, fid: number, username: string, followers?: number): Observation | undefined {
  const fields: Record<string, unknown> = { wallet, kind: "farcaster", route: "farcaster-verification", fid, username };
  if (followers !== undefined) fields.followers = followers;
  const parsed = parseObservationFields(fields, 1);
  return parsed.ok ? parsed.observation : undefined;
}

/**
 * The one call from the hub sync into the import path. The observations carry no observed_at:
 * seen again, they change nothing, so a backfill run twice writes nothing new.
 */
export async function writeHubObservations(tx: Db, observations: Observation[], now: Date): Promise<ImportCounts | undefined> {
  if (observations.length === 0) return undefined;
  return await writeObservations(tx, observations, now, "hub");
}

/**
 * Writes a backfill page of shard `shard` (read at `pageToken`) and moves the shard to
 * `nextPageToken`, in one transaction under the lease: a page is written whole or not at all.
 */
export async function writeBackfillPage(
  db: Db,
  lease: HubLease,
  page: { shard: number; pageToken: string; nextPageToken: string; lastFid: number; fids: number; observations: Observation[] },
  now: Date,
): Promise<void> {
  await db.transaction(async (tx) => {
    await lease.check(tx);
    await writeHubObservations(tx, page.observations, now);
    await tx.query(sql("hub_shards_advance"), [page.shard, page.nextPageToken, page.lastFid, page.fids, page.nextPageToken === "", page.pageToken]);
  }, BULK);
}

export async function knownUsernames(db: Db, fids: number[]): Promise<Map<number, string>> {
  if (fids.length === 0) return new Map();
  const rows = await db.query<{ fid: string; username: string }>(sql("farcaster_accounts_select_usernames"), [fids]);
  return new Map(rows.map((r) => [Number(r.fid), r.username]));
}

export interface EventPage {
  /** The last event of the page: recorded as applied with the page's effects. */
  lastEventId: bigint;
  headEventId: bigint;
  removes: Array<{ fid: number; address: string }>;
  /** Verification adds, each with its fid's username. */
  adds: Observation[];
  /** Usernames set: the account and every wallet its verifications bind move to the new one. */
  usernames: Map<number, string>;
}

/** Applies a page of hub events and records its last event id, in one transaction under the lease. */
export async function applyEventPage(db: Db, lease: HubLease, page: EventPage, now: Date): Promise<void> {
  await db.transaction(async (tx) => {
    await lease.check(tx);
    if (page.removes.length > 0) {
      const removed = await tx.query<{ wallet: string }>(sql("links_delete_farcaster_verifications"), [
        page.removes.map((r) => r.address),
        page.removes.map((r) => r.fid),
      ]);
      const wallets = [...new Set(removed.map((r) => r.wallet))];
      if (wallets.length > 0) await tx.query(sql("wallets_reset_last_updated"), [wallets]);
    }
    const observations = [...page.adds];
    if (page.usernames.size > 0) {
      const fids = [...page.usernames.keys()];
      // the accounts themselves, so an fid with no wallet yet keeps the new username for the next add
      await tx.query(sql("farcaster_accounts_upsert_many"), [fids, fids.map((f) => page.usernames.get(f)!), fids.map(() => null), fids.map(() => now)]);
      const bound = await tx.query<{ fid: string; wallet: string }>(sql("links_select_farcaster_wallets"), [fids]);
      for (const { fid, wallet } of bound) {
        const observation = hubObservation(wallet, Number(fid), page.usernames.get(Number(fid))!);
        if (observation) observations.push(observation);
      }
    }
    await writeHubObservations(tx, observations, now);
    // removals write no observation: their watched wallets (marked by links_watch_delete) are
    // compared here, with the page's other changes, as one wallet.changed each
    if (page.removes.length > 0) await changedWallets(tx, "hub", now);
    const advanced = await tx.query(sql("hub_sync_advance"), [lease.holder, page.lastEventId.toString(), page.headEventId.toString(), now]);
    if (advanced.length === 0) throw new LeaseLost();
  }, BULK);
}
