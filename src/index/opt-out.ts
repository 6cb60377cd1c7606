// Opt-out by wallet signature: the EIP-4361 (Sign-In with Ethereum) challenge a wallet signs, its
// checks, the signature check (EOAs by recovery, contract wallets through ERC-1271 and ERC-6492
// over ETH_RPC_URL) and the suppression list (00021_opt_outs.sql), which every read joins.
import { createPublicClient, custom, type Hex } from "viem";
import { createSiweMessage, parseSiweMessage, verifySiweMessage } from "viem/siwe";
import type { Db } from "../db/types.ts";
import { sql } from "../db/queries.ts";

export type OptOutAction = "remove" | "restore";

/** A challenge is valid ten minutes. */
export const CHALLENGE_TTL_MS = 10 * 60_000;
/** A message dated this far ahead of the server's clock is still accepted (clocks of several servers). */
const CLOCK_SKEW_MS = 30_000;
/** The only chain a challenge names: where a contract wallet is asked (ERC-1271). */
export const CHAIN_ID = 1;

/** What signing does, in the message itself (one line, as EIP-4361 requires). */
export function statementFor(action: OptOutAction): string {
  return action === "remove"
    ? "Remove this wallet from walletid: every lookup will answer it as never seen, until the wallet signs a restore. Signing is free and moves no funds."
    : "Restore this wallet in walletid: lookups will show what the index holds about it again. Signing is free and moves no funds.";
}

/** 128 bits from Web Crypto as 32 hex characters (alphanumeric, as EIP-4361 nonces must be). */
function randomNonce(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** The domain (host and port) and URI every challenge of this site names. */
function siteOf(publicUrl: string): { domain: string; uri: string } {
  const url = new URL(publicUrl);
  return { domain: url.host, uri: `${url.origin}/opt-out` };
}

export interface Challenge {
  message: string;
  expires_at: string;
}

/** Issues and stores a single-use challenge for `wallet` (lowercased) to sign. */
export async function issueChallenge(
  db: Db,
  params: { wallet: string; action: OptOutAction; publicUrl: string; now: Date },
): Promise<Challenge> {
  const { wallet, action, now } = params;
  const nonce = randomNonce();
  const expires = new Date(now.getTime() + CHALLENGE_TTL_MS);
  const message = createSiweMessage({
    ...siteOf(params.publicUrl),
    address: wallet as Hex,
    chainId: CHAIN_ID,
    nonce,
    version: "1",
    statement: statementFor(action),
    issuedAt: now,
    expirationTime: expires,
  });
  // expired challenges are never read again; pruning them here keeps the table to the last day's
  await db.query(sql("opt_out_challenges_prune"), [new Date(now.getTime() - 86_400_000)]);
  await db.query(sql("opt_out_challenges_insert"), [nonce, wallet, action, message, now, expires]);
  return { message, expires_at: expires.toISOString() };
}

export type MessageCheck =
  | { ok: true; nonce: string; wallet: string; action: OptOutAction }
  | { ok: false; code: "malformed_wallet" | "unknown" | "used" | "expired" | "altered" };

/**
 * Checks a message sent back against the challenge stored under its nonce: exactly as issued,
 * unused and unexpired, and (viem does not check these) naming this site, chain 1, the statement
 * of its action and an issue time within the last ten minutes.
 */
export async function checkMessage(db: Db, params: { message: string; publicUrl: string; now: Date }): Promise<MessageCheck> {
  const { message, now } = params;
  const addressLine = message.split("\n")[1];
  if (/wants you to sign in with your Ethereum account:/.test(message) && addressLine !== undefined && !/^0x[0-9a-fA-F]{40}$/.test(addressLine)) {
    return { ok: false, code: "malformed_wallet" };
  }
  const parsed = parseSiweMessage(message);
  if (!parsed.nonce || !parsed.address) return { ok: false, code: "unknown" };
  const [stored] = await db.query<{ wallet: string; action: OptOutAction; message: string; expires_at: Date; used_at: Date | null }>(
    sql("opt_out_challenges_select"),
    [parsed.nonce],
  );
  if (!stored) return { ok: false, code: "unknown" };
  if (stored.message !== message) return { ok: false, code: "altered" };
  if (stored.used_at) return { ok: false, code: "used" };
  if (stored.expires_at.getTime() <= now.getTime()) return { ok: false, code: "expired" };
  const site = siteOf(params.publicUrl);
  const issuedAt = parsed.issuedAt?.getTime() ?? NaN;
  const fits =
    parsed.domain === site.domain &&
    parsed.uri === site.uri &&
    parsed.chainId === CHAIN_ID &&
    parsed.version === "1" &&
    parsed.statement === statementFor(stored.action) &&
    parsed.address.toLowerCase() === stored.wallet &&
    parsed.expirationTime !== undefined;
  if (!fits) return { ok: false, code: "altered" };
  if (!(now.getTime() - issuedAt <= CHALLENGE_TTL_MS && issuedAt - now.getTime() <= CLOCK_SKEW_MS)) return { ok: false, code: "expired" };
  return { ok: true, nonce: parsed.nonce, wallet: stored.wallet, action: stored.action };
}

/** The chain could not be asked about a contract wallet's signature: answer 503, retry later. */
export class ChainUnavailable extends Error {}

/**
 * Whether `signature` is the message's wallet's, by viem's verifySiweMessage with the domain and
 * nonce passed: ECDSA recovery first (no RPC for an ordinary account), then, with `rpcUrl`, the
 * ERC-6492 universal validator by eth_call (ERC-1271 for deployed contract wallets). Without an
 * RPC a contract wallet's signature is not valid. Throws ChainUnavailable when the RPC failed.
 */
export function siweVerifier(options: { rpcUrl?: string; timeoutMs: number }) {
  return async (params: { message: string; signature: string; domain: string; nonce: string; now: Date }): Promise<boolean> => {
    let unavailable: string | undefined;
    const client = createPublicClient({
      transport: custom({
        async request({ method, params: rpcParams }) {
          if (!options.rpcUrl) {
            unavailable = "no ETH_RPC_URL";
            throw new Error("no RPC configured");
          }
          let res: Response;
          try {
            res = await fetch(options.rpcUrl, {
              method: "POST",
              headers: { "content-type": "application/json" },
              body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params: rpcParams }),
              signal: AbortSignal.timeout(options.timeoutMs),
            });
          } catch (err) {
            unavailable = err instanceof Error ? err.message : String(err);
            throw err;
          }
          const body = (await res.json().catch(() => undefined)) as { result?: unknown; error?: { code: number; message: string } } | undefined;
          if (!res.ok || !body || (body.result === undefined && !body.error)) {
            unavailable = `HTTP ${res.status}`;
            throw new Error(`RPC answered HTTP ${res.status}`);
          }
          // a JSON-RPC error (a revert) is the contract's answer, not an outage
          if (body.error) throw Object.assign(new Error(body.error.message), { code: body.error.code });
          return body.result;
        },
      }),
    });
    const valid = await verifySiweMessage(client, {
      message: params.message,
      signature: params.signature as Hex,
      domain: params.domain,
      nonce: params.nonce,
      time: params.now,
      // recovery first: an ordinary account needs no RPC round trip
      mode: "eoa",
    } as Parameters<typeof verifySiweMessage>[1]).catch((err: unknown) => {
      if (unavailable !== undefined) return false;
      throw err;
    });
    if (!valid && unavailable !== undefined && options.rpcUrl) throw new ChainUnavailable(unavailable);
    return valid;
  };
}

/** The domain a challenge of this site names, for verifySiweMessage. */
export function siteDomain(publicUrl: string): string {
  return siteOf(publicUrl).domain;
}

export type Applied = {
  wallet: string;
  action: OptOutAction;
  opted_out: boolean;
  effective_at: Date;
};

/**
 * Consumes the challenge (one conditional UPDATE) and records the request with its proof, the
 * message, signature and time, in one transaction; undefined when it was no longer open.
 */
export async function applySignedRequest(
  db: Db,
  params: { nonce: string; message: string; signature: string; now: Date },
): Promise<Applied | undefined> {
  const [row] = await db.query<Applied>(sql("opt_out_apply"), [params.nonce, params.message, params.signature, params.now]);
  return row;
}

/** A request that came by another channel, recorded with the operator's reason. */
export async function recordOperatorRequest(
  db: Db,
  params: { wallet: string; action: OptOutAction; reason: string; now: Date },
): Promise<{ wallet: string; opted_out: boolean; effective_at: Date }> {
  const [row] = await db.query<{ wallet: string; opted_out: boolean; effective_at: Date }>(sql("opt_out_record"), [
    params.wallet,
    params.action,
    params.reason,
    params.now,
  ]);
  return row;
}

/** Every wallet on the suppression list, oldest first. */
export async function listOptOuts(db: Db): Promise<Array<{ wallet: string; opted_out_at: Date; via: string; reason: string | null }>> {
  return [...(await db.query<{ wallet: string; opted_out_at: Date; via: string; reason: string | null }>(sql("opt_outs_select_all")))];
}
