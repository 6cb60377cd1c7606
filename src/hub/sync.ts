// The hub sync: a backfill of every fid of every shard, then a follower of /v1/events from the
// event the backfill started at, both under the one hub lease. The server runs it in the
// background with FARCASTER_HUB_URL; `npm run admin -- ingest farcaster` runs it on demand.
import type { Db } from "../db/types.ts";
import type { Observation } from "../index/observations.ts";
import { createHubClient, HubError, type EventsPage, type HubClient } from "./client.ts";
import { effectOf, verifiedAddress, type HubEvent } from "./messages.ts";
import {
  acquireHubLease,
  applyEventPage,
  finishBackfill,
  hubObservation,
  knownUsernames,
  LeaseLost,
  readSync,
  shardProgress,
  startBackfill,
  writeBackfillPage,
  type HubLease,
} from "./store.ts";

export interface HubSyncOptions {
  db: Db;
  hubUrl: string;
  apiKey?: string;
  now: () => Date;
  log: (line: string, level?: "info" | "warn" | "error") => void;
  /** Hub requests in flight at once. */
  concurrency?: number;
  /** Only this shard (the admin command's --shard). */
  shard?: number;
  /** fids a /v1/fids page. */
  fidsPageSize?: number;
  /** Follow links counted when they fit one page of this many (0: followers are not read). */
  followersLimit?: number;
  leaseMs?: number;
  /** How long the follower waits when it has caught up with the hub. */
  pollMs?: number;
  timeoutMs?: number;
  retries?: number;
  backoffMs?: number;
  fetch?: typeof fetch;
  signal?: AbortSignal;
  onProgress?: (progress: HubProgress) => void;
}

export interface HubProgress {
  phase: "backfill" | "follow";
  fids: number;
  addresses: number;
  observations: number;
  shardsDone: number;
  shards: number;
  lastEventId: bigint | null;
  events: number;
}

export interface BackfillResult {
  fids: number;
  addresses: number;
  observations: number;
  last_event_id: string | null;
}

export const DEFAULT_LEASE_MS = 30_000;
/** How long a caught-up follower waits before asking the hub again (HUB_POLL_MS). */
export const DEFAULT_POLL_MS = 250;

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });
}

/** Runs `work` on every item, at most `limit` at once, results in order. */
async function mapLimited<T, R>(items: T[], limit: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const run = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await work(items[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, run));
  return out;
}

/** The id of the newest event the hub holds: /v1/events paged from 0 (the oldest it keeps) to its end. */
export async function newestEventId(client: HubClient, signal?: AbortSignal): Promise<bigint> {
  let from = 0n;
  let newest = 0n;
  for (;;) {
    if (signal?.aborted) throw new HubError("stopped");
    const page = await client.events(from);
    for (const e of page.events) if (e.id > newest) newest = e.id;
    if (page.events.length === 0 || page.nextPageEventId <= from) return newest;
    from = page.nextPageEventId;
  }
}

/** A hub sync bound to one lease: backfill() and follow() stop when the signal aborts or the lease is lost. */
export class HubSync {
  readonly client: HubClient;
  readonly progress: HubProgress = { phase: "backfill", fids: 0, addresses: 0, observations: 0, shardsDone: 0, shards: 0, lastEventId: null, events: 0 };
  private readonly concurrency: number;

  constructor(private readonly o: HubSyncOptions, private readonly lease: HubLease) {
    this.concurrency = o.concurrency ?? 16;
    this.client = createHubClient({
      baseUrl: o.hubUrl,
      apiKey: o.apiKey,
      concurrency: this.concurrency,
      timeoutMs: o.timeoutMs,
      retries: o.retries,
      backoffMs: o.backoffMs,
      fetch: o.fetch,
      signal: o.signal,
    });
  }

  private report(): void {
    this.o.onProgress?.(this.progress);
  }

  /**
   * Backfills every shard (or the one asked), resuming a backfill this database left unfinished.
   * The newest event id is taken before the first fid is read, so the follower misses nothing.
   */
  async backfill(): Promise<BackfillResult> {
    const { db, now } = this.o;
    const state = await readSync(db);
    const resuming = state.backfillStartedAt !== null && state.backfillDoneAt === null && state.startEventId !== null;
    if (!resuming) {
      const start = await newestEventId(this.client, this.o.signal);
      await startBackfill(db, this.lease, this.o.hubUrl, start, now());
      this.o.log(`Hub: backfill of ${this.o.hubUrl} started; the follower starts after event ${start}`);
    } else {
      this.o.log(`Hub: resuming the backfill of ${this.o.hubUrl} started ${state.backfillStartedAt!.toISOString()}`);
    }
    const all = await this.client.shards();
    if (this.o.shard !== undefined && !all.includes(this.o.shard)) throw new HubError(`the hub has no shard ${this.o.shard} (it has ${all.join(", ")})`);
    const shards = this.o.shard !== undefined ? [this.o.shard] : all;
    const progress = (await shardProgress(db, all)).filter((p) => shards.includes(p.shard));
    this.progress.phase = "backfill";
    this.progress.shards = progress.length;
    this.progress.shardsDone = progress.filter((p) => p.done).length;
    const seen = new Set<string>();
    await Promise.all(
      progress.filter((p) => !p.done).map(async (p) => {
        let pageToken = p.pageToken;
        const after = p.lastFid;
        // a page is read while the one before it is written; writes stay in page order
        let writing: Promise<void> = Promise.resolve();
        for (;;) {
          if (this.o.signal?.aborted) break;
          const page = await this.client.fids(p.shard, pageToken, this.o.fidsPageSize ?? 1000);
          // the stored page is the first one not written: after a stop, it may hold fids an
          // earlier, larger page wrote (a hub's page size is its own): those are skipped
          const fids = pageToken === p.pageToken ? page.fids.filter((f) => f > after) : page.fids;
          const observations = (await mapLimited(fids, this.concurrency, (fid) => this.observationsOf(fid))).flat();
          await writing;
          if (this.o.signal?.aborted) break;
          const at = pageToken;
          writing = writeBackfillPage(db, this.lease, { shard: p.shard, pageToken: at, nextPageToken: page.nextPageToken, lastFid: page.fids.at(-1) ?? 0, fids: fids.length, observations }, now()).then(() => {
            this.progress.fids += fids.length;
            this.progress.observations += observations.length;
            for (const o of observations) if (o.kind === "farcaster") seen.add(o.wallet);
            this.progress.addresses = seen.size;
            this.report();
          });
          // a failed write stops the shard at once, not after the next page's reads
          writing.catch(() => {});
          if (page.nextPageToken === "") break;
          pageToken = page.nextPageToken;
        }
        await writing;
        if (this.o.signal?.aborted) return;
        this.progress.shardsDone++;
        this.report();
      }),
    );
    if (this.o.signal?.aborted) return this.result();
    // with --shard only that shard is done: the backfill as a whole is finished by a full run
    if ((await shardProgress(db)).every((p) => p.done)) {
      this.progress.lastEventId = await finishBackfill(db, this.lease, now());
    }
    return this.result();
  }

  private result(): BackfillResult {
    return {
      fids: this.progress.fids,
      addresses: this.progress.addresses,
      observations: this.progress.observations,
      last_event_id: this.progress.lastEventId?.toString() ?? null,
    };
  }

  /** The farcaster observations of one fid: its Ethereum verifications with its username (and follower count when cheap). */
  private async observationsOf(fid: number, knownUsername?: string): Promise<Observation[]> {
    const addresses = new Set<string>();
    for (const m of await this.client.verifications(fid)) {
      const address = verifiedAddress(m);
      if (address && m.data?.fid === fid) addresses.add(address);
    }
    if (addresses.size === 0) return [];
    const [username, followers] = await Promise.all([
      knownUsername ?? this.client.username(fid),
      (this.o.followersLimit ?? 1000) > 0 ? this.client.followers(fid, this.o.followersLimit ?? 1000) : undefined,
    ]);
    // an fid with no username yet: its username event brings its verifications in
    if (!username) return [];
    return [...addresses].flatMap((a) => hubObservation(a, fid, username, followers) ?? []);
  }

  /** Follows /v1/events from the last applied event until the signal aborts or the lease is lost. */
  async follow(): Promise<void> {
    const { db, now } = this.o;
    const state = await readSync(db);
    const from = state.lastEventId ?? state.startEventId;
    if (from === null) throw new HubError("nothing to follow from: run a backfill first");
    let last: bigint = from;
    this.progress.phase = "follow";
    this.progress.lastEventId = last;
    this.o.log(`Hub: following ${this.o.hubUrl} after event ${last}`);
    this.report();
    // the next page is asked for while this one is applied
    let next: Promise<EventsPage> | undefined;
    while (!this.o.signal?.aborted) {
      const page: EventsPage = await (next ?? this.client.events(last + 1n));
      next = undefined;
      const events = page.events.filter((e) => e.id > last).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
      if (events.length === 0) {
        await sleep(this.o.pollMs ?? DEFAULT_POLL_MS, this.o.signal);
        continue;
      }
      const pageLast = events.at(-1)!.id;
      next = this.client.events(pageLast + 1n);
      next.catch(() => {});
      await this.applyEvents(events, page.nextPageEventId);
      last = pageLast;
      this.progress.lastEventId = last;
      this.progress.events += events.length;
      this.report();
    }
  }

  /** One page of events: folded to the last effect per key, its lookups made, then one transaction. */
  private async applyEvents(events: HubEvent[], nextPageEventId: bigint): Promise<void> {
    const verifications = new Map<string, { op: "add" | "remove"; fid: number; address: string }>();
    const usernames = new Map<number, string>();
    for (const event of events) {
      const effect = effectOf(event);
      if (!effect) continue;
      if (effect.op === "username") usernames.set(effect.fid, effect.username);
      else verifications.set(`${effect.fid}|${effect.address}`, effect);
    }
    const addsByFid = new Map<number, string[]>();
    const removes: Array<{ fid: number; address: string }> = [];
    for (const v of verifications.values()) {
      if (v.op === "remove") removes.push(v);
      else addsByFid.set(v.fid, [...(addsByFid.get(v.fid) ?? []), v.address]);
    }
    const known = await knownUsernames(this.o.db, [...new Set([...addsByFid.keys(), ...usernames.keys()])]);
    const adds: Observation[] = [];
    await mapLimited([...addsByFid], this.concurrency, async ([fid, addresses]) => {
      const username = usernames.get(fid) ?? known.get(fid) ?? (await this.client.username(fid));
      if (!username) return;
      for (const a of addresses) {
        const o = hubObservation(a, fid, username);
        if (o) adds.push(o);
      }
    });
    // a username for an fid the index has never seen: its verifications come from the hub
    const newFids = [...usernames.keys()].filter((fid) => !known.has(fid) && !addsByFid.has(fid));
    const fetched = await mapLimited(newFids, this.concurrency, (fid) => this.observationsOf(fid, usernames.get(fid)));
    const removed = new Set(removes.map((r) => `${r.fid}|${r.address}`));
    for (const o of fetched.flat()) if (o.kind === "farcaster" && !removed.has(`${o.fid}|${o.wallet}`)) adds.push(o);
    const lastEventId = events.at(-1)!.id;
    await applyEventPage(this.o.db, this.lease, { lastEventId, headEventId: nextPageEventId > 0n ? nextPageEventId - 1n : lastEventId, removes, adds, usernames }, this.o.now());
  }
}

/** Renews the lease every third of its life; aborts `stop` when it is lost. Returns what ends the renewing. */
function keepLease(lease: HubLease, leaseMs: number, stop: AbortController, log: HubSyncOptions["log"]): () => void {
  const timer = setInterval(() => {
    lease.renew().then(
      (held) => {
        if (!held) {
          log("Hub: the lease was lost to another process; stopping", "warn");
          stop.abort();
        }
      },
      () => {},
    );
  }, Math.max(100, Math.floor(leaseMs / 3)));
  (timer as { unref?: () => void }).unref?.();
  return () => clearInterval(timer);
}

export type RunOutcome =
  | { status: "done"; result: BackfillResult }
  | { status: "busy"; holderUntil: Date | null }
  | { status: "stopped"; result: BackfillResult };

/**
 * Takes the lease, backfills (when `backfill` says so, or none has finished), then follows when
 * asked, until the signal aborts. `busy` when another process holds the lease.
 */
export async function runHubSync(options: HubSyncOptions & { backfill: "always" | "once"; follow: boolean }): Promise<RunOutcome> {
  const leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
  const lease = await acquireHubLease(options.db, { now: options.now, leaseMs });
  if (!lease) return { status: "busy", holderUntil: (await readSync(options.db)).leaseUntil };
  const stop = new AbortController();
  const signal = options.signal ? AbortSignal.any([options.signal, stop.signal]) : stop.signal;
  const endRenewing = keepLease(lease, leaseMs, stop, options.log);
  const sync = new HubSync({ ...options, signal }, lease);
  try {
    const state = await readSync(options.db);
    let result: BackfillResult = { fids: 0, addresses: 0, observations: 0, last_event_id: state.lastEventId?.toString() ?? null };
    if (options.backfill === "always" || state.backfillDoneAt === null) result = await sync.backfill();
    if (signal.aborted) return { status: "stopped", result };
    if (options.follow) {
      await sync.follow();
      result = { ...result, last_event_id: sync.progress.lastEventId?.toString() ?? result.last_event_id };
      return { status: "stopped", result };
    }
    return { status: "done", result };
  } catch (error) {
    if (signal.aborted && (error instanceof HubError || error instanceof LeaseLost)) {
      return { status: "stopped", result: { fids: sync.progress.fids, addresses: sync.progress.addresses, observations: sync.progress.observations, last_event_id: sync.progress.lastEventId?.toString() ?? null } };
    }
    throw error;
  } finally {
    endRenewing();
    await lease.release().catch(() => {});
  }
}

/**
 * The server's background sync (FARCASTER_HUB_URL): tries for the lease, backfills once, follows;
 * on a failure or while another process holds the lease, tries again later. Returns stop.
 */
export function startHubSync(options: HubSyncOptions & { retryMs?: number }): () => Promise<void> {
  const stop = new AbortController();
  const signal = options.signal ? AbortSignal.any([options.signal, stop.signal]) : stop.signal;
  const retryMs = options.retryMs ?? Math.floor((options.leaseMs ?? DEFAULT_LEASE_MS) / 2);
  let busySaid = false;
  const loop = (async () => {
    while (!signal.aborted) {
      try {
        const outcome = await runHubSync({ ...options, signal, backfill: "once", follow: true });
        if (outcome.status === "busy" && !busySaid) {
          options.log("Hub: another process is syncing the hub; this one waits for its lease");
          busySaid = true;
        }
      } catch (error) {
        options.log(`Hub: sync stopped: ${(error as Error).message}; trying again in ${Math.round(retryMs / 1000)} s`, "error");
      }
      await sleep(retryMs, signal);
    }
  })();
  return async () => {
    stop.abort();
    await loop;
  };
}
