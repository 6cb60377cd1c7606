// POST {site_url}/api/x402/buy (Agent packs paid over x402 v2, no account needed; a key in
// Authorization tops that key's account up) and GET/POST {site_url}/api/x402/recover (a new key
// for the wallet that paid, by signature). Bodies are bare JSON objects; errors are {error, code}.
import { Hono, type Context } from "hono";
import { encodePaymentRequiredHeader, encodePaymentResponseHeader } from "@x402/core/http";
import { PAYMENT_REQUIRED_CACHE_CONTROL } from "@x402/core/server";
import type { PaymentRequirements, SettleResponse } from "@x402/core/types";
import * as v from "valibot";
import { sql } from "../db/queries.ts";
import { readCredits } from "../ledger/accounts.ts";
import { isApiKeyShape } from "../ledger/keys.ts";
import { readAtMost, tooLarge } from "../http/body.ts";
import { ApiError, errorBody } from "../http/errors.ts";
import { credentialOf, keyDigest } from "../http/meter.ts";
import { createPaymentServer, decodePayment, paymentRequirements, replayKey, settlePayment, verifyPayment, type PaymentServer } from "../x402/payment.ts";
import { claimPayment, findClaim, grantPayment, MATCHES_PER_PACK, MAX_KEYS_PER_WALLET, PACK, recordOutcome, walletAccount, type Claim, type Grant } from "../x402/purchase.ts";
import { createRecoverySigner, recoverKey, signatureVerifier } from "../x402/recovery.ts";
import { BuyBody, RecoverBody, RecoverQuery } from "../x402/schemas.ts";
import type { OperationDeps } from "../operations/deps.ts";

export { x402Openapi } from "../x402/openapi.ts";

/** An OAuth access token (issue 12): recognised by its prefix, never accepted for buying. */
const OAUTH_TOKEN_PREFIX = "wid_mcp_";
const BODY_LIMIT = 16 * 1024;
/** How long a second submission of a payment being settled waits for the first one's outcome. */
const REPLAY_WAIT_MS = 15_000;

export interface X402Deps extends OperationDeps {
  /** The resource server; by default the one X402_FACILITATOR_URL and X402_PAY_TO configure. */
  payments?: PaymentServer;
}

function dollars(quantity: number): string {
  return `${quantity}.00 USDC`;
}

function packs(quantity: number): string {
  return `${quantity} Agent pack${quantity === 1 ? "" : "s"}`;
}

function parseQuantity(body: Uint8Array): number {
  const text = new TextDecoder().decode(body).trim();
  if (text === "") return 1;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new ApiError(400, "INVALID_REQUEST", "Request body is not valid JSON: send {\"quantity\": N} or no body");
  }
  // valibot takes an array for an object with no required fields: refuse it here
  const result = Array.isArray(parsed) ? undefined : v.safeParse(BuyBody, parsed);
  if (!result?.success) {
    throw new ApiError(400, "INVALID_REQUEST", `Invalid purchase body: the only field is quantity, a whole number from 1 to 25`);
  }
  return result.output.quantity ?? 1;
}

/** The account a top-up credits, from Authorization; undefined without one. Refusals come before any 402. */
async function topupAccount(deps: OperationDeps, req: Request): Promise<{ accountId: string; prefix: string } | undefined> {
  const credential = credentialOf(req);
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

function settlementFailure(c: Context, reference: string, settledForSure: boolean): Response {
  const message = settledForSure
    ? `Payment settled but the pack was not recorded: quote settlement reference ${reference} to support, who grant it once; do not pay again`
    : `The payment facilitator did not confirm the settlement: the payment may have been taken and nothing was granted; quote settlement reference ${reference} to support; do not pay again`;
  return c.json({ ...errorBody("INTERNAL_ERROR", message), settlement: reference }, 500);
}

export function x402Routes(deps: X402Deps) {
  const app = new Hono();
  const { facilitatorUrl, payTo } = { facilitatorUrl: deps.config.upstreams.x402FacilitatorUrl, payTo: deps.config.upstreams.x402PayTo };
  const payments =
    deps.payments ??
    (facilitatorUrl && payTo ? createPaymentServer({ facilitatorUrl, payTo, timeoutMs: deps.config.jobs.upstreamTimeoutMs }) : undefined);
  if (!payments) {
    deps.log(`Purchases are off: set ${[!facilitatorUrl && "X402_FACILITATOR_URL", !payTo && "X402_PAY_TO"].filter(Boolean).join(" and ")} to sell packs over x402 (POST /api/x402/buy answers 503)`);
  }
  const recovery = createRecoverySigner(deps.db, { site: deps.config.publicUrl, configuredSecret: deps.config.cursorSecret });
  const verifySignature = signatureVerifier({ rpcUrl: deps.config.upstreams.ethRpcUrl, timeoutMs: deps.config.jobs.upstreamTimeoutMs });
  const resource = (quantity: number) => ({
    url: `${deps.config.publicUrl}/api/x402/buy`,
    description: `${packs(quantity)} of walletid match credits (${quantity * MATCHES_PER_PACK} matches, valid 12 months)`,
    mimeType: "application/json",
  });

  /** 402 with a fresh challenge for this quantity; `reason` also goes into the challenge's error. */
  async function challenge(c: Context, server: PaymentServer, requirements: PaymentRequirements, quantity: number, reason?: string, settled?: SettleResponse) {
    const required = await server.resource.createPaymentRequiredResponse([requirements], resource(quantity), reason ?? "Payment required");
    c.header("PAYMENT-REQUIRED", encodePaymentRequiredHeader(required));
    c.header("Cache-Control", PAYMENT_REQUIRED_CACHE_CONTROL);
    if (settled) c.header("PAYMENT-RESPONSE", encodePaymentResponseHeader(settled));
    const message = reason
      ? `Payment refused (${reason}): sign a new payment of ${dollars(quantity)} for ${packs(quantity)} from the PAYMENT-REQUIRED header`
      : `Payment required: ${dollars(quantity)} for ${packs(quantity)}; pay with the x402 challenge in the PAYMENT-REQUIRED header and resend this request with PAYMENT-SIGNATURE`;
    return c.json(errorBody("PAYMENT_REQUIRED", message), 402);
  }

  /**
   * A payment already claimed: granted answers as a replay (no key, newly_granted false); one
   * still being settled is waited for; a failed one is refused again; an uncertain one repeats
   * its settlement reference.
   */
  async function answerClaimed(c: Context, server: PaymentServer, requirements: PaymentRequirements, quantity: number, first: Claim) {
    let claim: Claim | undefined = first;
    const deadline = Date.now() + REPLAY_WAIT_MS;
    while (claim && claim.state === "claimed" && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50 + Math.random() * 100));
      claim = await findClaim(deps.db, claim);
    }
    if (!claim || claim.state === "claimed") {
      throw new ApiError(503, "SERVICE_UNAVAILABLE", "This payment is still being settled: resend the same request shortly", { "Retry-After": "2" });
    }
    if (claim.state === "failed") return await challenge(c, server, requirements, quantity, claim.reason ?? "settlement_failed");
    if (claim.state !== "granted") return settlementFailure(c, claim.id, claim.state === "settled");
    const credits = await readCredits(deps.db, claim.account_id!, deps.now());
    c.header("PAYMENT-RESPONSE", encodePaymentResponseHeader({ success: true, transaction: claim.tx_hash ?? "", network: claim.network as `${string}:${string}`, payer: claim.payer }));
    return c.json(purchaseBody({ quantity: claim.quantity, matchesAvailable: credits.available, newlyGranted: false, topupPrefix: claim.topup_prefix }));
  }

  app.post("/api/x402/buy", async (c) => {
    const quantity = parseQuantity((await readAtMost(c.req.raw, BODY_LIMIT)) ?? tooLarge("16 KB"));
    const topup = await topupAccount(deps, c.req.raw);
    if (!payments) {
      throw new ApiError(503, "SERVICE_UNAVAILABLE", "Purchases are off on this server: no x402 facilitator is configured", { "Retry-After": "3600" });
    }
    const requirements = paymentRequirements(payments.payTo, quantity);
    const header = c.req.header("PAYMENT-SIGNATURE");
    if (!header) return await challenge(c, payments, requirements, quantity);

    const decoded = decodePayment(header);
    if (!decoded.ok) throw new ApiError(400, "INVALID_PAYMENT", `Cannot read PAYMENT-SIGNATURE: ${decoded.reason}`);
    // the server's own requirements for this quantity, never the client's echo
    const matched = payments.resource.findMatchingRequirements([requirements], decoded.payload);
    if (!matched) return await challenge(c, payments, requirements, quantity, "no_matching_payment_requirements");
    const key = replayKey(matched, decoded.authorization);

    const existing = await findClaim(deps.db, key);
    if (existing) {
      // the same signed authorization: tell what became of it; another signature over a used
      // nonce learns nothing
      if (existing.signature !== decoded.signature) return await challenge(c, payments, requirements, quantity, "authorization_already_used");
      return await answerClaimed(c, payments, requirements, quantity, existing);
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
      if (raced && raced.signature === decoded.signature) return await answerClaimed(c, payments, requirements, quantity, raced);
      return await challenge(c, payments, requirements, quantity, verified.reason);
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
      if (!winner || winner.signature !== decoded.signature) return await challenge(c, payments, requirements, quantity, "authorization_already_used");
      return await answerClaimed(c, payments, requirements, quantity, winner);
    }

    const settled = await settlePayment(payments, decoded.payload, matched);
    if (settled.state === "failed") {
      await recordOutcome(deps.db, { id: paymentId, state: "failed", reason: settled.reason, now: deps.now() });
      return await challenge(c, payments, requirements, quantity, settled.reason, settled.response);
    }
    if (settled.state === "unknown") {
      deps.log(`x402 settlement ${paymentId}: outcome unknown (${settled.reason}); kept for redeem after a check on chain`, "warn");
      await recordOutcome(deps.db, { id: paymentId, state: "unknown", reason: settled.reason, txHash: settled.response?.transaction, now: deps.now() }).catch(() => {});
      return settlementFailure(c, paymentId, false);
    }

    const txHash = settled.response.transaction;
    let result;
    try {
      // no separate "settled" write first: a claim reads `settled` only when its grant failed
      result = await grantPayment(deps.db, { paymentId, txHash, now: deps.now() });
    } catch (err) {
      deps.log(`x402 settlement ${paymentId} (tx ${txHash}) settled but not recorded: ${err instanceof Error ? err.message : String(err)}`, "error");
      await recordOutcome(deps.db, { id: paymentId, state: "settled", txHash, now: deps.now() }).catch(() => {});
      return settlementFailure(c, paymentId, true);
    }
    if (!result.ok) throw new Error(`x402 settlement ${paymentId}: grant refused (${result.code})`);
    const grant = result.grant;
    c.header("PAYMENT-RESPONSE", encodePaymentResponseHeader(settled.response));
    return c.json(
      purchaseBody({
        apiKey: grant.key?.apiKey,
        quantity: grant.quantity,
        matchesAvailable: grant.matchesAvailable,
        newlyGranted: true,
        topupPrefix: grant.topupPrefix,
        loyalty: grant.loyalty,
      }),
    );
  });

  app.get("/api/x402/recover", async (c) => {
    const query = v.safeParse(RecoverQuery, { wallet: c.req.query("wallet") });
    if (!query.success) {
      throw new ApiError(400, "INVALID_ADDRESS", "Invalid wallet: pass ?wallet= with the paying address, 0x followed by 40 hex characters");
    }
    return c.json(await recovery.issue(query.output.wallet.toLowerCase(), deps.now()));
  });

  app.post("/api/x402/recover", async (c) => {
    const body = new TextDecoder().decode((await readAtMost(c.req.raw, BODY_LIMIT)) ?? tooLarge("16 KB"));
    let parsed: unknown;
    try {
      parsed = JSON.parse(body);
    } catch {
      throw new ApiError(400, "INVALID_REQUEST", "Request body is not valid JSON");
    }
    const result = v.safeParse(RecoverBody, parsed);
    if (!result.success) {
      if (result.issues.some((i) => i.path?.[0]?.key === "wallet" && (i.input !== undefined))) {
        throw new ApiError(400, "INVALID_ADDRESS", "Invalid wallet: an address is 0x followed by 40 hex characters");
      }
      throw new ApiError(400, "INVALID_REQUEST", "Recovery body must be {wallet, issued_at, token, signature} with an optional boolean revoke_others_and_reissue");
    }
    const { issued_at: issuedAt, token, signature } = result.output;
    const wallet = result.output.wallet.toLowerCase();
    const now = deps.now();
    const check = await recovery.check({ wallet, issuedAt, token, now });
    if (check === "altered") throw new ApiError(400, "INVALID_CHALLENGE", "Invalid challenge: wallet, issued_at and token must be sent back exactly as GET /api/x402/recover returned them");
    if (check === "expired") throw new ApiError(400, "INVALID_CHALLENGE", "Challenge expired: it is valid five minutes; ask GET /api/x402/recover for a new one");
    let valid: boolean;
    try {
      valid = await verifySignature({ wallet, message: recovery.message(wallet, issuedAt), signature });
    } catch (err) {
      deps.log(`x402 recover: signature check over ETH_RPC_URL failed: ${err instanceof Error ? err.message : String(err)}`, "warn");
      throw new ApiError(503, "SERVICE_UNAVAILABLE", "Cannot check a smart-wallet signature now: retry shortly", { "Retry-After": "5" });
    }
    if (!valid) throw new ApiError(401, "INVALID_SIGNATURE", "Invalid signature: sign the challenge's message with the wallet's key (personal_sign), exactly as returned");
    const outcome = await recoverKey(deps.db, { wallet, token, revoke: result.output.revoke_others_and_reissue === true, now });
    if (!outcome.ok) {
      switch (outcome.code) {
        case "NOT_FOUND":
          throw new ApiError(404, "NOT_FOUND", "This wallet has not bought a key: only a wallet that paid for one can recover it");
        case "TOKEN_USED":
          throw new ApiError(400, "INVALID_CHALLENGE", "Challenge already used: ask GET /api/x402/recover for a new one");
        case "KEY_CAP_REACHED":
          throw new ApiError(409, "KEY_CAP_REACHED", `This wallet already holds ${MAX_KEYS_PER_WALLET} active keys: sign a fresh challenge and send it with revoke_others_and_reissue: true to revoke them all and get one new key`);
      }
    }
    return c.json({ api_key: outcome.apiKey, key_prefix: outcome.prefix, revoked_prefixes: outcome.revokedPrefixes });
  });

  return app;
}
