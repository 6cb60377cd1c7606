// The hourly limit of the MCP server's non-tool methods (docs/mcp.md, "Limits"), counted in the
// database so that every instance shares it; anonymous callers are keyed on src/http/client-address.ts.
import type { Log } from "../observe/log.ts";
import type { Db } from "../db/types.ts";
import { sql } from "../db/queries.ts";
import type { McpCaller } from "./credentials.ts";

export const HOURLY_LIMITS = { account: 600, ip: 120 } as const;

export type HourlyVerdict =
  | { ok: true }
  | { ok: false; kind: "account" | "ip"; limit: number; retryAfterSeconds: number };

function hourStart(now: Date): Date {
  return new Date(now.getTime() - (now.getTime() % 3_600_000));
}

export interface HourlyLimiter {
  /** Counts `requests` non-tool requests of a caller and says whether they are within the limit. */
  count(caller: McpCaller, params: { address: string; requests: number; now: Date }): Promise<HourlyVerdict>;
}

export function createHourlyLimiter(db: Db, log: Log): HourlyLimiter {
  let prunedHour = 0;
  return {
    async count(caller, { address, requests, now }) {
      const hour = hourStart(now);
      if (hour.getTime() !== prunedHour) {
        // once an hour per process: past hours are never read again
        prunedHour = hour.getTime();
        db.query(sql("mcp_hourly_requests_delete_before"), [hour]).catch((err: Error) =>
          log(`mcp hourly limits: cannot prune past hours: ${err.message}`, "warn"),
        );
      }
      const keyHash = caller.kind === "api_key" ? caller.keyHash : null;
      const accountId = caller.kind === "oauth" ? caller.accountId : null;
      const [row] = await db.query<{ subject: string; count: number }>(sql("mcp_hourly_requests_count"), [
        keyHash,
        accountId,
        hour,
        requests,
        address,
      ]);
      const kind = row.subject.startsWith("account:") ? "account" : "ip";
      const limit = HOURLY_LIMITS[kind];
      if (row.count <= limit) return { ok: true };
      const retryAfterSeconds = Math.max(1, Math.ceil((hour.getTime() + 3_600_000 - now.getTime()) / 1000));
      return { ok: false, kind, limit, retryAfterSeconds };
    },
  };
}
