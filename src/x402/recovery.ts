// Recovery of a lost key by wallet signature: a stateless challenge (HMAC-SHA-256 over the wallet,
// the time it was issued and the site, under a server secret, as the cursors are signed), an
// EIP-191 personal_sign signature over its message, and a new key on the account the wallet paid
// for. At three active keys only `revoke_others_and_reissue` issues one, revoking the others in
// the same transaction.
import { createPublicClient, http, verifyMessage, type Hex } from "viem";
import { verifyMessage as verifyMessageOnChain } from "viem/actions";
import type { Db } from "../db/types.ts";
import { sql } from "../db/queries.ts";
import { fromBase64Url, secretMac, toBase64Url } from "../http/cursor.ts";
import { sha256Hex } from "../ledger/keys.ts";
import { MAX_KEYS_PER_WALLET, mintKey, walletAccount } from "./purchase.ts";

/** A recovery challenge is valid five minutes. */
export const CHALLENGE_TTL_MS = 5 * 60_000;
/** A challenge dated this far in the future is still accepted (clocks of several servers). */
const CLOCK_SKEW_MS = 30_000;
const SECRET_NAME = "x402_recovery_hmac";

export interface Challenge {
  message: string;
  issued_at: string;
  token: string;
}

/** The text the wallet signs: the service, the wallet, the time and the site, exactly as returned. */
export function recoveryMessage(params: { wallet: string; issuedAt: string; site: string }): string {
  return [
    "walletid key recovery",
    "",
    "Sign this message to receive a new walletid API key for the account this wallet paid for.",
    "Signing costs nothing and moves no funds.",
    "",
    `Wallet: ${params.wallet}`,
    `Issued at: ${params.issuedAt}`,
    `Site: ${params.site}`,
  ].join("\n");
}

export interface RecoverySigner {
  /** The message of the challenge issued for this wallet at this time. */
  message(wallet: string, issuedAt: string): string;
  issue(wallet: string, now: Date): Promise<Challenge>;
  /** Checks a challenge sent back: `ok`, or why it is refused. */
  check(params: { wallet: string; issuedAt: string; token: string; now: Date }): Promise<"ok" | "altered" | "expired">;
}

export function createRecoverySigner(db: Db, options: { site: string; configuredSecret?: string }): RecoverySigner {
  const hmacKey = secretMac(db, SECRET_NAME, options.configuredSecret);
  // domain-separated from the cursors, which may share the configured secret
  const signed = (wallet: string, issuedAt: string) => `x402-recover|${wallet}|${issuedAt}|${options.site}`;

  return {
    message: (wallet, issuedAt) => recoveryMessage({ wallet, issuedAt, site: options.site }),
    async issue(wallet, now) {
      const issuedAt = now.toISOString();
      const mac = (await hmacKey()).sign(signed(wallet, issuedAt));
      return { message: recoveryMessage({ wallet, issuedAt, site: options.site }), issued_at: issuedAt, token: toBase64Url(mac) };
    },
    async check({ wallet, issuedAt, token, now }) {
      const mac = fromBase64Url(token);
      if (!mac) return "altered";
      if (!(await hmacKey()).verify(mac, signed(wallet, issuedAt))) return "altered";
      const at = Date.parse(issuedAt);
      if (!Number.isFinite(at) || now.getTime() - at > CHALLENGE_TTL_MS || at - now.getTime() > CLOCK_SKEW_MS) return "expired";
      return "ok";
    },
  };
}

/**
 * Verifies a personal_sign signature: ECDSA recovery for ordinary accounts; with an RPC URL,
 * viem's verifyMessage action also accepts ERC-1271 (and ERC-6492) smart-wallet signatures.
 * Throws only when the RPC itself fails.
 */
export function signatureVerifier(options: { rpcUrl?: string; timeoutMs: number }) {
  const client = options.rpcUrl ? createPublicClient({ transport: http(options.rpcUrl, { retryCount: 0, timeout: options.timeoutMs }) }) : undefined;
  return async (params: { wallet: string; message: string; signature: string }): Promise<boolean> => {
    const address = params.wallet as Hex;
    const signature = params.signature as Hex;
    const byKey = await verifyMessage({ address, message: params.message, signature }).catch(() => false);
    if (byKey || !client) return byKey;
    return await verifyMessageOnChain(client, { address, message: params.message, signature });
  };
}

export type RecoveryResult =
  | { ok: true; apiKey: string; prefix: string; revokedPrefixes: string[] }
  | { ok: false; code: "NOT_FOUND" | "TOKEN_USED" | "KEY_CAP_REACHED" };

/**
 * Issues a key on the wallet's account, spending the challenge (`tokenHash`) in the same
 * transaction. At the cap the challenge stays spent and nothing else changes; with `revoke`
 * every active key of the account is revoked first, so one key remains.
 */
export async function recoverKey(db: Db, params: { wallet: string; token: string; revoke: boolean; now: Date }): Promise<RecoveryResult> {
  const tokenHash = await sha256Hex(params.token);
  await db.query(sql("x402_recovery_uses_prune"), [new Date(params.now.getTime() - CHALLENGE_TTL_MS - CLOCK_SKEW_MS)]);
  return await db.transaction(async (tx): Promise<RecoveryResult> => {
    const account = await walletAccount(tx, params.wallet);
    if (!account) return { ok: false, code: "NOT_FOUND" };
    const spent = await tx.query(sql("x402_recovery_uses_insert"), [tokenHash, params.wallet, params.now]);
    if (spent.length === 0) return { ok: false, code: "TOKEN_USED" };
    const revoked = params.revoke
      ? (await tx.query<{ prefix: string }>(sql("x402_api_keys_revoke_all"), [account.accountId, params.now])).map((r) => r.prefix)
      : [];
    const key = await mintKey(tx, { accountId: account.accountId, name: "x402 recovery", now: params.now, cap: MAX_KEYS_PER_WALLET });
    if (!key) return { ok: false, code: "KEY_CAP_REACHED" };
    return { ok: true, apiKey: key.apiKey, prefix: key.prefix, revokedPrefixes: revoked };
  });
}
