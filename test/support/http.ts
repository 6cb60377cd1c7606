// Helpers for the HTTP suites: status checks that print the body, index fixtures and reads of
// the ledger tables (debits, rate_windows, usage_counts) after a mutating call.
import assert from "node:assert/strict";
import type { Db } from "../../src/db/types.ts";
import { importObservations } from "../../src/index/import.ts";

/** A deterministic address: `0x` + the tag's hex digits, then n, padded to 40 hex characters. */
export function address(n: number, tag = "a"): string {
  const hex = n.toString(16);
  return `0x${tag}${hex.padStart(40 - tag.length, "0")}`;
}

export interface Checked {
  status: number;
  headers: Headers;
  text: string;
  body: any;
}

/** Reads the response and asserts its status; the failure message carries the body. */
export async function expectStatus(res: Response, status: number, what = ""): Promise<Checked> {
  const text = await res.text();
  assert.equal(res.status, status, `${what ? `${what}: ` : ""}expected HTTP ${status}, got ${res.status}: ${text.slice(0, 2000)}`);
  let body: any;
  if (text !== "") {
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
  }
  return { status: res.status, headers: res.headers, text, body };
}

/** Asserts the error body is exactly {error, code} with the code given. */
export function assertErrorBody(checked: Checked, code: string): void {
  assert.ok(checked.body && typeof checked.body === "object", `expected a JSON error body, got: ${checked.text}`);
  assert.deepEqual(Object.keys(checked.body).sort(), ["code", "error"], `error body is {error, code}: ${checked.text}`);
  assert.equal(checked.body.code, code, `error code: ${checked.text}`);
  assert.equal(typeof checked.body.error, "string", `error message: ${checked.text}`);
  assert.ok(checked.body.error.length > 0, `error message is not empty: ${checked.text}`);
}

export const RATE_HEADERS = ["X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"] as const;

export function rateHeaders(checked: Checked): { limit: number; remaining: number; reset: number } {
  for (const name of RATE_HEADERS) {
    assert.ok(checked.headers.has(name), `${name} present on ${checked.status}: ${checked.text.slice(0, 500)}`);
  }
  return {
    limit: Number(checked.headers.get("X-RateLimit-Limit")),
    remaining: Number(checked.headers.get("X-RateLimit-Remaining")),
    reset: Number(checked.headers.get("X-RateLimit-Reset")),
  };
}

export function assertNoRateHeaders(checked: Checked): void {
  for (const name of RATE_HEADERS) {
    assert.equal(checked.headers.get(name), null, `${name} absent on ${checked.status}: ${checked.text.slice(0, 500)}`);
  }
}

export function epochSeconds(at: string | Date): number {
  return Math.floor(new Date(at).getTime() / 1000);
}

/** Imports observation objects (the NDJSON import format) as one file. */
export async function importIndex(db: Db, observations: object[], now: Date) {
  return await importObservations(db, observations.map((o) => JSON.stringify(o)), { now });
}

export interface DebitRow {
  call_key: string;
  part: number;
  grant_id: string | null;
  source: string;
  matches: number;
  drawn_after: number | null;
  created_at: Date;
}

export async function debitsOf(db: Db, accountId: string): Promise<DebitRow[]> {
  const rows = await db.query<DebitRow & Record<string, unknown>>(
    `SELECT call_key, part::integer AS part, grant_id::text AS grant_id, source, matches, drawn_after, created_at
       FROM debits WHERE account_id = $1 ORDER BY id`,
    [accountId],
  );
  // postgres.js answers with an Array subclass; tests compare plain arrays
  return [...rows];
}

export async function debitedTotal(db: Db, accountId: string): Promise<number> {
  const rows = await debitsOf(db, accountId);
  return rows.reduce((sum, r) => sum + r.matches, 0);
}

export interface RateWindowRow {
  minute_start: Date;
  minute_used: number;
  day_start: Date;
  day_used: number;
  month_start: Date;
  month_used: number;
}

export async function rateWindowOf(db: Db, accountId: string): Promise<RateWindowRow | undefined> {
  const [row] = await db.query<RateWindowRow & Record<string, unknown>>(
    `SELECT minute_start, minute_used, day_start, day_used, month_start, month_used FROM rate_windows WHERE account_id = $1`,
    [accountId],
  );
  return row;
}

/** Writes an account's rate_windows row as if earlier calls had used these units. */
export async function setRateWindow(
  db: Db,
  accountId: string,
  w: { minuteStart: string; minuteUsed: number; dayStart: string; dayUsed: number; monthStart: string; monthUsed: number },
): Promise<void> {
  await db.query(
    `INSERT INTO rate_windows (account_id, minute_start, minute_used, day_start, day_used, month_start, month_used)
     VALUES ($1, $2, $3, $4, $5, $6, $7)
     ON CONFLICT (account_id) DO UPDATE
        SET minute_start = excluded.minute_start, minute_used = excluded.minute_used,
            day_start = excluded.day_start, day_used = excluded.day_used,
            month_start = excluded.month_start, month_used = excluded.month_used`,
    [accountId, new Date(w.minuteStart), w.minuteUsed, new Date(w.dayStart), w.dayUsed, new Date(w.monthStart), w.monthUsed],
  );
}

export interface UsageCountRow {
  minute: Date;
  route: string;
  status: number;
  requests: number;
  units: number;
  wallets: number;
  matches: number;
  latency_ms_sum: number;
}

/** Usage counters as stored, oldest minute first; they are buffered, so read them after a GET /usage has flushed them. */
export async function usageCountsOf(db: Db, accountId: string): Promise<UsageCountRow[]> {
  const rows = await db.query<UsageCountRow & Record<string, unknown>>(
    `SELECT minute, route, status::integer AS status, requests, units::integer AS units, wallets::integer AS wallets,
            matches::integer AS matches, latency_ms_sum
       FROM usage_counts WHERE account_id = $1 ORDER BY minute, route COLLATE "C", status`,
    [accountId],
  );
  return [...rows];
}

export async function grantIdsOf(db: Db, accountId: string): Promise<Array<{ id: string; pack: string; expires_at: Date }>> {
  const rows = await db.query<{ id: string; pack: string; expires_at: Date }>(
    `SELECT id::text AS id, pack, expires_at FROM credit_grants WHERE account_id = $1 ORDER BY id`,
    [accountId],
  );
  return [...rows];
}

/** JSON body for POST /batch. */
export function batchInit(key: string, wallets: unknown[]): RequestInit & { key: string } {
  return {
    method: "POST",
    key,
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ wallets }),
  };
}
