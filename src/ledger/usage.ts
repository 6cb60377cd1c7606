// Usage events, buffered and written many rows a statement so recording costs no round trip per request.
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

export function createUsageRecorder(db: Db, options: { delayMs?: number; maxBuffered?: number; log?: Log } = {}): UsageRecorder {
  const delayMs = options.delayMs ?? 200;
  const maxBuffered = options.maxBuffered ?? 1000;
  let buffer: UsageEvent[] = [];
  let timer: ReturnType<typeof setTimeout> | undefined;
  let writing: Promise<void> = Promise.resolve();

  function write(events: UsageEvent[]): Promise<void> {
    return db
      .query(sql("usage_events_insert_many"), [
        events.map((e) => e.accountId),
        events.map((e) => e.keyId),
        events.map((e) => e.route),
        events.map((e) => e.status),
        events.map((e) => Math.round(e.latencyMs * 100) / 100),
        events.map((e) => e.units),
        events.map((e) => e.wallets),
        events.map((e) => e.matches),
        events.map((e) => e.at),
      ])
      .then(() => {}, (err) => options.log?.(`usage events lost (${events.length}): ${(err as Error).message}`, "error"));
  }

  function flush(): Promise<void> {
    if (timer) clearTimeout(timer);
    timer = undefined;
    if (buffer.length > 0) {
      const events = buffer;
      buffer = [];
      writing = writing.then(() => write(events));
    }
    return writing;
  }

  return {
    record(event) {
      buffer.push(event);
      if (buffer.length >= maxBuffered) void flush();
      else if (!timer) timer = setTimeout(() => void flush(), delayMs);
    },
    flush,
  };
}
