// Buying Agent packs over x402 v2: keyless (a wallet's first purchase creates its account and key),
// or a key's account topped up. Face: POST /api/x402/buy, which keeps the x402 headers.
import type { PaymentRequirements, SettleResponse } from "@x402/core/types";
import { sql } from "../db/queries.ts";
import { readCredits } from "../ledger/accounts.ts";
import { isApiKeyShape } from "../ledger/keys.ts";
import { ApiError } from "../http/errors.ts";
import { keyDigest } from "../http/meter.ts";
import { createPaymentServer, decodePayment, paymentRequirements, replayKey, settlePayment, verifyPayment, type PaymentServer, type ReplayKey } from "../x402/payment.ts";
import { authorizationReader, type AuthorizationUsed } from "../x402/chain.ts";
import { claimPayment, findClaim, findClaimById, grantPayment, MATCHES_PER_PACK, MAX_KEYS_PER_WALLET, PACK, recordOutcome, takeOverClaim, walletAccount, type Claim, type Grant } from "../x402/purchase.ts";
import type { OperationDeps } from "./deps.ts";
import { outcomeOf, type Outcome } from "./outcome.ts";

/** An OAuth access token (issue 12): recognised by its prefix, never accepted for buying. */
const OAUTH_TOKEN_PREFIX = "wid_mcp_";
/** How long a second submission of a payment being settled waits for the first one's outcome. */
const REPLAY_WAIT_MS = 15_000;
/** Beyond twice the facilitator timeout (verify and settle), how long a live claimer may take to record its outcome. */
const CLAIM_GRACE_MS = 30_000;
/** Attempts at recording a settlement whose grant failed. */
const RECORD_ATTEMPTS = 3;

export interface PurchaseDeps extends OperationDeps {
  /** The resource server; undefined when purchases are off (X402_FACILITATOR_URL or X402_PAY_TO unset). */
  payments: PaymentServer | undefined;
  /** Whether the chain has used an authorization's nonce (X402_RPC_URL); undefined when unset. */
  authorizationUsed?: AuthorizationUsed;
}

/**
 * The purchase dependencies of a process: the resource server given, or the one
 * X402_FACILITATOR_URL and X402_PAY_TO configure; says once in the log when purchases are off.
 */
export function createPurchaseDeps(deps: OperationDeps, payments?: PaymentServer): PurchaseDeps {
  const { facilitatorUrl, payTo } = { facilitatorUrl: deps.config.upstreams.x402FacilitatorUrl, payTo: deps.config.upstreams.x402PayTo };
  const server =
    payments ??
    (facilitatorUrl && payTo ? createPaymentServer({ facilitatorUrl, payTo, timeoutMs: deps.config.jobs.upstreamTimeoutMs }) : undefined);
  if (!server) {
    deps.log(`Purchases are off: set ${[!facilitatorUrl && "X402_FACILITATOR_URL", !payTo && "X402_PAY_TO"].filter(Boolean).join(" and ")} to sell packs over x402 (POST /api/x402/buy answers 503)`);
  }
  const rpcUrl = deps.config.upstreams.x402RpcUrl;
  const authorizationUsed = rpcUrl ? authorizationReader({ rpcUrl, timeoutMs: deps.config.jobs.upstreamTimeoutMs }) : undefined;
  return { ...deps, payments: server, authorizationUsed };
}

/** What the buyer is asked to pay: a fresh challenge for this quantity; `reason` says why the last payment was refused. */
export interface PaymentRequired {
  kind: "payment_required";
  payments: PaymentServer;
  requirements: PaymentRequirements;
  quantity: number;
  reason?: string;
  /** The facilitator's answer when settlement failed. */
  settled?: SettleResponse;
}

export type Purchase =
  /** The pack granted (or, for a payment already granted, its replay): the body, and the settlement for PAYMENT-RESPONSE. */
  | { kind: "bought"; body: ReturnType<typeof purchaseBody>; paymentResponse: SettleResponse }
  | PaymentRequired
  /** Money may have moved and nothing was granted: the reference to quote to support. */
  | { kind: "settlement_uncertain"; reference: string };

/** The account a top-up credits, from Authorization; undefined without one. Refusals come before any 402. */
async function topupAccount(deps: OperationDeps, credential: string | undefined): Promise<{ accountId: string; prefix: string } | undefined> {
  if (credential === undefined) return undefined;
  if (credential.startsWith(OAUTH_TOKEN_PREFIX)) {
    throw new ApiError(403, "OAUTH_CANNOT_BUY", "An OAuth access token cannot buy credits: send an API key to top up its account, or no Authorization to buy a new key");
  }
  const invalid = new ApiError(401, "INVALID_TOPUP_KEY", "Invalid top-up key: Authorization must carry an active API key (wid_live_...), or be left out to buy a new key");
  if (!isApiKeyShape(credential)) throw invalid;
  const [row] = await deps.db.query<{ account_id: string; prefix: string }>(sql("x402_api_keys_select_active"), [await keyDigest(credential)]);
  if (!row) throw invalid;
  return { accountId: row.account_id, prefix: row.prefix };
}

function purchaseBody(grant: { apiKey?: string; quantity: number; matchesAvailable: number; newlyGranted: boolean; topupPrefix: string | null; loyalty?: Grant["loyalty"] }) {
  return {
    api_key: grant.apiKey ?? null,
    shown_once: grant.apiKey !== undefined,
    matches_added: grant.quantity * MATCHES_PER_PACK,
    quantity: grant.quantity,
    matches_available: grant.matchesAvailable,
    pack: PACK,
    newly_granted: grant.newlyGranted,
    ...(grant.topupPrefix ? { credited_to_key_prefix: grant.topupPrefix } : {}),
    ...(grant.loyalty ? { loyalty_bonus: grant.loyalty } : {}),
  };
}

/** The payment a request carries, once decoded and matched: what settling it again needs. */
interface Presented {
  payload: DecodedPayload;
  matched: PaymentRequirements;
  key: ReplayKey;
}
type DecodedPayload = Extract<ReturnType<typeof decodePayment>, { ok: true }>["payload"];

/** How long a claim may stay without an outcome before a replay takes it over: its claimer is gone. */
function staleAfterMs(deps: PurchaseDeps): number {
  return 2 * deps.config.jobs.upstreamTimeoutMs + CLAIM_GRACE_MS;
}

/** A granted payment answered as a replay (no key, newly_granted false). */
async function replayAnswer(deps: PurchaseDeps, claim: Claim): Promise<Purchase> {
  const credits = await readCredits(deps.db, claim.account_id!, deps.now());
  return {
    kind: "bought",
    body: purchaseBody({ quantity: claim.quantity, matchesAvailable: credits.available, newlyGranted: false, topupPrefix: claim.topup_prefix }),
    paymentResponse: { success: true, transaction: claim.tx_hash ?? "", network: claim.network as `${string}:${string}`, payer: claim.payer },
  };
}

/**
 * A payment already claimed: granted answers as a replay (no key, newly_granted false); settled
 * but not granted (its grant failed or its process died) is granted now, once; one still being
 * settled is waited for, and taken over and settled again when its claimer is gone; a failed one
 * is refused again; an uncertain one repeats its settlement reference.
 */
async function answerClaimed(deps: PurchaseDeps, asked: PaymentRequired, first: Claim, presented: Presented): Promise<Purchase> {
  let claim: Claim | undefined = first;
  const deadline = Date.now() + REPLAY_WAIT_MS;
  while (claim && claim.state === "claimed") {
    const now = deps.now();
    if (await takeOverClaim(deps.db, { id: claim.id, staleBefore: new Date(now.getTime() - staleAfterMs(deps)), now })) {
      deps.log(`x402 settlement ${claim.id}: its claimer recorded no outcome in time; a replay took it over`, "warn");
      return await settleAndGrant(deps, asked, claim.id, presented, true);
    }
    if (Date.now() >= deadline) break;
    await new Promise((resolve) => setTimeout(resolve, 50 + Math.random() * 100));
    claim = await findClaim(deps.db, claim);
  }
  if (!claim || claim.state === "claimed") {
    throw new ApiError(503, "SERVICE_UNAVAILABLE", "This payment is still being settled: resend the same request shortly", { "Retry-After": "2" });
  }
  if (claim.state === "failed") return { ...asked, reason: claim.reason ?? "settlement_failed" };
  if (claim.state === "settled") {
    const paymentResponse: SettleResponse = { success: true, transaction: claim.tx_hash ?? "", network: claim.network as `${string}:${string}`, payer: claim.payer };
    return await grantSettled(deps, claim.id, paymentResponse);
  }
  if (claim.state !== "granted") return { kind: "settlement_uncertain", reference: claim.id };
  return await replayAnswer(deps, claim);
}

/**
 * Settles a claimed payment and grants it. `retaken`: a replay took the claim over from a claimer
 * that died, which may have settled it already; a refusal then (the nonce is used) cannot tell
 * whether money moved, so it is kept as unknown for a check on chain, never as failed.
 */
async function settleAndGrant(deps: PurchaseDeps, asked: PaymentRequired, paymentId: string, presented: Presented, retaken: boolean): Promise<Purchase> {
  const settled = await settlePayment(asked.payments, presented.payload, presented.matched);
  if (settled.state !== "settled" && retaken) {
    const onChain = await lookOnChain(deps, presented);
    if (onChain === true) {
      // the dead claimer's transfer went through: record it, then grant it as it would have
      deps.log(`x402 settlement ${paymentId}: the chain shows the authorization used; granting the orphaned purchase`, "warn");
      await recordOutcome(deps.db, { id: paymentId, state: "settled", now: deps.now() });
      return await grantSettled(deps, paymentId, { success: true, transaction: "", network: presented.matched.network as `${string}:${string}`, payer: presented.key.payer });
    }
    if (onChain === false && settled.state === "failed") {
      // the nonce is unused: nothing moved, neither then nor now
      await recordOutcome(deps.db, { id: paymentId, state: "failed", reason: settled.reason, now: deps.now() });
      return { ...asked, reason: settled.reason, settled: settled.response };
    }
  }
  if (settled.state === "failed" && !retaken) {
    await recordOutcome(deps.db, { id: paymentId, state: "failed", reason: settled.reason, now: deps.now() });
    return { ...asked, reason: settled.reason, settled: settled.response };
  }
  if (settled.state !== "settled") {
    deps.log(`x402 settlement ${paymentId}: outcome unknown (${settled.reason}); kept for redeem after a check on chain`, "warn");
    await recordOutcome(deps.db, { id: paymentId, state: "unknown", reason: settled.reason, txHash: settled.response?.transaction, now: deps.now() }).catch(() => {});
    return { kind: "settlement_uncertain", reference: paymentId };
  }
  return await grantSettled(deps, paymentId, settled.response, true);
}

/**
 * Whether the payment's authorization moved the money on chain (true), or its nonce is unused
 * (false); undefined when there is no X402_RPC_URL, the chain cannot be read, or the nonce is spent
 * with no transfer found (a canceled authorization): then nothing is granted on the chain's word.
 */
async function lookOnChain(deps: PurchaseDeps, presented: Presented): Promise<boolean | undefined> {
  if (!deps.authorizationUsed) return undefined;
  try {
    const used = await deps.authorizationUsed(presented.key);
    if (used === undefined) deps.log(`x402: the authorization's nonce is spent but no transfer with it is on chain (canceled, or too old to look for); kept for a check by hand`, "warn");
    return used;
  } catch (err) {
    deps.log(`x402: cannot read the chain at X402_RPC_URL: ${err instanceof Error ? err.message : String(err)}`, "warn");
    return undefined;
  }
}

/**
 * Grants a payment whose settlement went through. When the grant cannot be written (the database
 * failing), the settlement is recorded (retried briefly) and the buyer is told 503 with
 * Retry-After: resending the same payment grants it then, once.
 */
async function grantSettled(deps: PurchaseDeps, paymentId: string, paymentResponse: SettleResponse, justSettled = false): Promise<Purchase> {
  const txHash = paymentResponse.transaction;
  let result;
  try {
    result = await grantPayment(deps.db, { paymentId, txHash, now: deps.now() });
  } catch (err) {
    deps.log(`x402 settlement ${paymentId} (tx ${txHash}) settled but not granted yet: ${err instanceof Error ? err.message : String(err)}`, "error");
    if (justSettled) await recordSettled(deps, paymentId, txHash);
    throw new ApiError(503, "SERVICE_UNAVAILABLE", "Payment settled but the pack could not be recorded yet: resend the same request (same PAYMENT-SIGNATURE) shortly to receive it; do not pay again", { "Retry-After": "2" });
  }
  if (!result.ok && result.code === "ALREADY_GRANTED") {
    // a concurrent replay (or an operator's redeem) granted it first
    const claim = await findClaimById(deps.db, paymentId);
    if (claim) return await replayAnswer(deps, claim);
  }
  if (!result.ok) throw new Error(`x402 settlement ${paymentId}: grant refused (${result.code})`);
  const grant = result.grant;
  return {
    kind: "bought",
    body: purchaseBody({
      apiKey: grant.key?.apiKey,
      quantity: grant.quantity,
      matchesAvailable: grant.matchesAvailable,
      newlyGranted: true,
      topupPrefix: grant.topupPrefix,
      loyalty: grant.loyalty,
    }),
    paymentResponse,
  };
}

/** Records a settlement whose grant failed, a few times over a transient fault; a claim left unrecorded is taken over by a replay later. */
async function recordSettled(deps: PurchaseDeps, paymentId: string, txHash: string): Promise<void> {
  for (let attempt = 0; attempt < RECORD_ATTEMPTS; attempt++) {
    try {
      await recordOutcome(deps.db, { id: paymentId, state: "settled", txHash, now: deps.now() });
      return;
    } catch (err) {
      deps.log(`x402 settlement ${paymentId}: recording the settlement failed (attempt ${attempt + 1}): ${err instanceof Error ? err.message : String(err)}`, "warn");
      await new Promise((resolve) => setTimeout(resolve, 100 * 2 ** attempt));
    }
  }
}

/**
 * Buys `quantity` Agent packs with the x402 payment in `paymentSignature` (none: the challenge).
 * `credential`: the Authorization the buyer sent, naming the key whose account a top-up credits.
 * The order of checks (top-up key, challenge, payment, replay, key cap, verification, claim,
 * settlement, grant) makes sure no money moves for a purchase that would be refused.
 */
export function buyPacks(
  deps: PurchaseDeps,
  credential: string | undefined,
  input: { quantity: number; paymentSignature?: string },
): Promise<Outcome<Purchase>> {
  return outcomeOf(() => buy(deps, credential, input));
}

async function buy(deps: PurchaseDeps, credential: string | undefined, input: { quantity: number; paymentSignature?: string }): Promise<Purchase> {
  const { quantity } = input;
  const topup = await topupAccount(deps, credential);
  const { payments } = deps;
  if (!payments) {
    throw new ApiError(503, "SERVICE_UNAVAILABLE", "Purchases are off on this server: no x402 facilitator is configured", { "Retry-After": "3600" });
  }
  const requirements = paymentRequirements(payments.payTo, quantity);
  const header = input.paymentSignature;
  const asked: PaymentRequired = { kind: "payment_required", payments, requirements, quantity };
  if (!header) return asked;

  const decoded = decodePayment(header);
  if (!decoded.ok) throw new ApiError(400, "INVALID_PAYMENT", `Cannot read PAYMENT-SIGNATURE: ${decoded.reason}`);
  // the server's own requirements for this quantity, never the client's echo
  const matched = payments.resource.findMatchingRequirements([requirements], decoded.payload);
  if (!matched) return { ...asked, reason: "no_matching_payment_requirements" };
  const key = replayKey(matched, decoded.authorization);
  const presented: Presented = { payload: decoded.payload, matched, key };

  const existing = await findClaim(deps.db, key);
  if (existing) {
    // the same signed authorization: tell what became of it; another signature over a used
    // nonce learns nothing
    if (existing.signature !== decoded.signature) return { ...asked, reason: "authorization_already_used" };
    return await answerClaimed(deps, asked, existing, presented);
  }
  if (!topup) {
    const own = await walletAccount(deps.db, key.payer);
    if (own && own.activeKeys >= MAX_KEYS_PER_WALLET) {
      throw new ApiError(409, "KEY_CAP_REACHED", `This wallet already holds ${MAX_KEYS_PER_WALLET} active keys: top one up (send it in Authorization) or recover with revoke_others_and_reissue; no payment was taken`);
    }
  }

  const verified = await verifyPayment(payments, decoded.payload, matched);
  if (!verified.ok && "unavailable" in verified) {
    deps.log(`x402 verify: the facilitator is unavailable: ${verified.unavailable}`, "warn");
    throw new ApiError(503, "SERVICE_UNAVAILABLE", "The payment facilitator is unavailable: nothing was charged; retry shortly", { "Retry-After": "5" });
  }
  if (!verified.ok) {
    // a concurrent submission of this payment may have settled it meanwhile (the nonce is used)
    const raced = await findClaim(deps.db, key);
    if (raced && raced.signature === decoded.signature) return await answerClaimed(deps, asked, raced, presented);
    return { ...asked, reason: verified.reason };
  }

  const paymentId = crypto.randomUUID();
  const claimed = await claimPayment(deps.db, {
    id: paymentId,
    key,
    signature: decoded.signature,
    payTo: matched.payTo,
    amount: matched.amount,
    quantity,
    topup,
    now: deps.now(),
  });
  if (!claimed) {
    const winner = await findClaim(deps.db, key);
    if (!winner || winner.signature !== decoded.signature) return { ...asked, reason: "authorization_already_used" };
    return await answerClaimed(deps, asked, winner, presented);
  }

  return await settleAndGrant(deps, asked, paymentId, presented, false);
}
