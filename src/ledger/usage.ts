// Usage, counted in memory per (account, key, route template, status, minute) and added to the
// usage_counts rows many at a time, so recording a call costs neither a round trip nor a row.
import type { Log } from "../observe/log.ts";
import type { Db } from "../db/types.ts";
import { sql } from "../db/queries.ts";

export interface UsageEvent {
  accountId: string;
  keyId: string;
  route: string;
  status: number;
  latencyMs: number;
  units: number;
  wallets: number;
  matches: number;
  at: Date;
}

export interface UsageRecorder {
  record(event: UsageEvent): void;
  /** Writes everything buffered so far (before reading usage, and at shutdown). */
  flush(): Promise<void>;
}

/** One usage counter: the calls of a key on a route template with one status within one minute. */
interface Counter {
  accountId: string;
  keyId: string;
  route: string;
  status: number;
  minute: Date;
  requests: number;
  units: number;
  wallets: number;
  matches: number;
  latencyMs: number;
}

export function createUsageRecorder(db: Db, options: { delayMs?: number; maxBuffered?: number; log?: Log } = {}): UsageRecorder {
  const delayMs = options.delayMs ?? 200;
  const maxBuffered = options.maxBuffered ?? 1000;
  let counters = new Map<string, Counter>();
  let timer: ReturnType<typeof setTimeout> | undefined;
  let writing: Promise<void> = Promise.resolve();

  function write(rows: Counter[]): Promise<void> {
    return db
      .query(sql("usage_counts_upsert_many"), [
        rows.map((r) => r.accountId),
        rows.map((r) => r.keyId),
        rows.map((r) => r.route),
        rows.map((r) => r.status),
        rows.map((r) => r.minute),
        rows.map((r) => r.requests),
        rows.map((r) => r.units),
        rows.map((r) => r.wallets),
        rows.map((r) => r.matches),
        rows.map((r) => Math.round(r.latencyMs * 100) / 100),
      ])
      .then(() => {}, (err) => options.log?.(`usage counters lost (${rows.length}): ${(err as Error).message}`, "error"));
  }

  function flush(): Promise<void> {
    if (timer) clearTimeout(timer);
    timer = undefined;
    if (counters.size > 0) {
      const rows = [...counters.values()];
      counters = new Map();
      writing = writing.then(() => write(rows));
    }
    return writing;
  }

  return {
    record(event) {
      const minuteMs = event.at.getTime() - (event.at.getTime() % 60_000);
      const id = `${event.accountId} ${event.keyId} ${event.status} ${minuteMs} ${event.route}`;
      const counter = counters.get(id);
      if (counter) {
        counter.requests++;
        counter.units += event.units;
        counter.wallets += event.wallets;
        counter.matches += event.matches;
        counter.latencyMs += event.latencyMs;
      } else {
        const { accountId, keyId, route, status, units, wallets, matches, latencyMs } = event;
        counters.set(id, { accountId, keyId, route, status, minute: new Date(minuteMs), requests: 1, units, wallets, matches, latencyMs });
      }
      if (counters.size >= maxBuffered) void flush();
      else if (!timer) timer = setTimeout(() => void flush(), delayMs);
    },
    flush,
  };
}
