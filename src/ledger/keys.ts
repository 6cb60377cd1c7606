// API keys: wid_live_ + 32 random characters, stored as SHA-256 only, at most 10 active per account.
import type { Db } from "../db/types.ts";
import { sql } from "../db/queries.ts";

export const KEY_PREFIX = "wid_live_";
export const MAX_ACTIVE_KEYS = 10;
const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

export function generateApiKey(): string {
  // rejection sampling keeps every character equally likely
  const out: string[] = [];
  while (out.length < 32) {
    for (const byte of crypto.getRandomValues(new Uint8Array(48))) {
      if (byte < 248 && out.length < 32) out.push(ALPHABET[byte % 62]);
    }
  }
  return KEY_PREFIX + out.join("");
}

export function isApiKeyShape(value: string): boolean {
  return /^wid_live_[A-Za-z0-9]{32}$/.test(value);
}

export async function sha256Hex(value: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(value));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

export function keyPrefix(apiKey: string): string {
  return apiKey.slice(0, 12);
}

export type CreateKeyResult =
  | { ok: true; apiKey: string; prefix: string; keyId: string }
  | { ok: false; code: "ACCOUNT_NOT_FOUND" | "KEY_CAP_REACHED" };

/**
 * Inserts a new key while the account holds fewer than `cap` active keys; undefined at the cap.
 * Runs inside the caller's transaction: the account row lock makes the count and insert one step.
 */
export async function insertApiKey(
  tx: Db,
  params: { accountId: string; name?: string; now: Date; cap: number },
): Promise<{ apiKey: string; prefix: string; keyId: string } | undefined> {
  const apiKey = generateApiKey();
  const keyId = crypto.randomUUID();
  const inserted = await tx.query(sql("api_keys_insert"), [
    keyId,
    params.accountId,
    await sha256Hex(apiKey),
    keyPrefix(apiKey),
    params.name ?? null,
    params.now,
    params.cap,
  ]);
  return inserted.length > 0 ? { apiKey, prefix: keyPrefix(apiKey), keyId } : undefined;
}

export async function createApiKey(
  db: Db,
  params: { accountId: string; name?: string; now: Date },
): Promise<CreateKeyResult> {
  return await db.transaction(async (tx) => {
    const account = await tx.query(sql("accounts_select_by_id"), [params.accountId]);
    if (account.length === 0) return { ok: false, code: "ACCOUNT_NOT_FOUND" } as const;
    const key = await insertApiKey(tx, { ...params, cap: MAX_ACTIVE_KEYS });
    if (!key) return { ok: false, code: "KEY_CAP_REACHED" } as const;
    return { ok: true, ...key } as const;
  });
}
