// The ledger side of a purchase: claiming a signed authorization before settlement, recording what
// settlement answered, and granting the pack (and minting the key) once it settled, in one
// transaction keyed by the payment so that nothing is ever granted twice.
import type { Db } from "../db/types.ts";
import { sql } from "../db/queries.ts";
import { grantCredits } from "../ledger/accounts.ts";
import { insertApiKey } from "../ledger/keys.ts";
import type { ReplayKey } from "./payment.ts";

export const PACK = "Agent";
export const MATCHES_PER_PACK = 12;
/** Active keys one paying wallet may hold on its account (docs/payments.md). */
export const MAX_KEYS_PER_WALLET = 3;
/** Every tenth settled purchase of a wallet earns one extra pack. */
export const LOYALTY_EVERY = 10;

export type PaymentState = "claimed" | "failed" | "unknown" | "settled" | "granted";

export interface Claim {
  id: string;
  state: PaymentState;
  reason: string | null;
  tx_hash: string | null;
  signature: string;
  quantity: number;
  topup_prefix: string | null;
  account_id: string | null;
  network: string;
  asset: string;
  payer: string;
  nonce: string;
}

export async function findClaim(db: Db, key: ReplayKey): Promise<Claim | undefined> {
  const [row] = await db.query<Claim & Record<string, unknown>>(sql("x402_payments_select_by_key"), [key.network, key.asset, key.payer, key.nonce]);
  return row;
}

export async function findClaimById(db: Db, id: string): Promise<Claim | undefined> {
  const [row] = await db.query<Claim & Record<string, unknown>>(sql("x402_payments_select_by_id"), [id]);
  return row;
}

/** Claims the authorization; false when another request claimed it first. */
export async function claimPayment(
  db: Db,
  params: {
    id: string;
    key: ReplayKey;
    signature: string;
    payTo: string;
    amount: string;
    quantity: number;
    topup?: { accountId: string; prefix: string };
    now: Date;
  },
): Promise<boolean> {
  const rows = await db.query(sql("x402_payments_claim"), [
    params.id,
    params.key.network,
    params.key.asset,
    params.key.payer,
    params.key.nonce,
    params.signature,
    params.payTo.toLowerCase(),
    params.amount,
    params.quantity,
    params.topup?.accountId ?? null,
    params.topup?.prefix ?? null,
    params.now,
  ]);
  return rows.length > 0;
}

/** Takes over a claim made before `staleBefore` whose claimer recorded nothing; false when it is live, settled or taken. */
export async function takeOverClaim(db: Db, params: { id: string; staleBefore: Date; now: Date }): Promise<boolean> {
  const rows = await db.query(sql("x402_payments_take_over"), [params.id, params.staleBefore, params.now]);
  return rows.length > 0;
}

export async function recordOutcome(
  db: Db,
  params: { id: string; state: "failed" | "unknown" | "settled"; reason?: string; txHash?: string; now: Date },
): Promise<void> {
  await db.query(sql("x402_payments_record_outcome"), [params.id, params.state, params.reason ?? null, params.txHash || null, params.now]);
}

/** A paying wallet's own account and its active keys, if a keyless purchase ever created one. */
export async function walletAccount(db: Db, wallet: string): Promise<{ accountId: string; activeKeys: number } | undefined> {
  const [row] = await db.query<{ account_id: string; active_keys: number }>(sql("x402_wallets_select_keys"), [wallet.toLowerCase()]);
  return row ? { accountId: row.account_id, activeKeys: row.active_keys } : undefined;
}

/** Mints a key on the account (locked first) while it holds fewer than `cap` active keys. */
export async function mintKey(tx: Db, params: { accountId: string; cap: number; name: string; now: Date }): Promise<{ apiKey: string; prefix: string; keyId: string } | undefined> {
  await tx.query(sql("accounts_select_by_id"), [params.accountId]);
  return await insertApiKey(tx, params);
}

export interface Grant {
  paymentId: string;
  accountId: string;
  /** Set on a keyless purchase while the wallet holds fewer than three active keys. */
  key?: { apiKey: string; prefix: string; keyId: string };
  topupPrefix: string | null;
  quantity: number;
  matchesAdded: number;
  matchesAvailable: number;
  purchaseNumber: number;
  loyalty?: { purchase_count: number; matches_added: number };
}

export type GrantResult =
  | { ok: true; grant: Grant }
  | { ok: false; code: "NOT_FOUND" }
  | { ok: false; code: "ALREADY_GRANTED"; grantedAt: Date; accountId: string }
  | { ok: false; code: "FAILED"; reason: string | null };

type PaymentRow = {
  id: string;
  state: PaymentState;
  reason: string | null;
  payer: string;
  quantity: number;
  topup_account: string | null;
  topup_prefix: string | null;
  account_id: string | null;
  granted_at: Date | null;
};

/**
 * Grants a settled payment: counts the purchase for its wallet, creates the wallet's account on
 * its first keyless purchase, grants the packs (grant key `x402:<payment id>`), the loyalty pack on
 * every tenth purchase, and mints a key on keyless purchases, all in one transaction. The payment
 * row is locked first, so a second grant of the same payment (a race with `admin x402 redeem`)
 * finds it granted and writes nothing.
 */
export async function grantPayment(db: Db, params: { paymentId: string; txHash?: string; now: Date }): Promise<GrantResult> {
  return await db.transaction(async (tx): Promise<GrantResult> => {
    const [payment] = await tx.query<PaymentRow & Record<string, unknown>>(sql("x402_payments_lock"), [params.paymentId]);
    if (!payment) return { ok: false, code: "NOT_FOUND" };
    if (payment.state === "granted") return { ok: false, code: "ALREADY_GRANTED", grantedAt: payment.granted_at!, accountId: payment.account_id! };
    if (payment.state === "failed") return { ok: false, code: "FAILED", reason: payment.reason };

    const [wallet] = await tx.query<{ account_id: string | null; purchases: number }>(sql("x402_wallets_count_purchase"), [payment.payer, params.now]);
    let accountId = payment.topup_account;
    let key: Grant["key"];
    if (!accountId) {
      accountId = wallet.account_id;
      if (!accountId) {
        // the wallet's first keyless purchase: an account with no email, no free allowance and no
        // account-menu identity (reverse farcaster refuses it)
        accountId = crypto.randomUUID();
        await tx.query(sql("accounts_insert"), [accountId, null, false, false, params.now]);
        await tx.query(sql("x402_wallets_set_account"), [payment.payer, accountId]);
      }
      // at the cap (a recovery raced the purchase) the pack is still granted, with no new key
      const minted = await mintKey(tx, { accountId, cap: MAX_KEYS_PER_WALLET, name: "x402 purchase", now: params.now });
      if (minted) key = minted;
    }

    let { credits } = await grantCredits(tx, { accountId, pack: PACK, quantity: payment.quantity, grantKey: `x402:${payment.id}`, now: params.now });
    let loyalty: Grant["loyalty"];
    if (wallet.purchases % LOYALTY_EVERY === 0) {
      // keyed by the wallet and the count, not the payment: the bonus carries no settlement
      ({ credits } = await grantCredits(tx, { accountId, pack: PACK, quantity: 1, grantKey: `x402-loyalty:${payment.payer}:${wallet.purchases}`, now: params.now }));
      loyalty = { purchase_count: wallet.purchases, matches_added: MATCHES_PER_PACK };
    }
    await tx.query(sql("x402_payments_mark_granted"), [payment.id, accountId, key?.keyId ?? null, wallet.purchases, params.now, params.txHash || null]);
    return {
      ok: true,
      grant: {
        paymentId: payment.id,
        accountId,
        key,
        topupPrefix: payment.topup_prefix,
        quantity: payment.quantity,
        matchesAdded: payment.quantity * MATCHES_PER_PACK,
        matchesAvailable: credits.available,
        purchaseNumber: wallet.purchases,
        loyalty,
      },
    };
  });
}
