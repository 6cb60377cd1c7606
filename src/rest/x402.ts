// POST {site_url}/api/x402/buy (Agent packs paid over x402 v2, no account needed; a key in
// Authorization tops that key's account up) and GET/POST {site_url}/api/x402/recover (a new key
// for the wallet that paid, by signature). Bodies are bare JSON objects; errors are {error, code}.
import { Hono, type Context } from "hono";
import { PAYMENT_REQUIRED_CACHE_CONTROL } from "@x402/core/server";
import * as v from "valibot";
import { readAtMost, tooLarge } from "../http/body.ts";
import { ApiError, errorBody } from "../http/errors.ts";
import { credentialOf } from "../http/meter.ts";
import type { OperationDeps } from "../operations/deps.ts";
import { buyPacks, createPurchaseDeps, type PaymentRequired } from "../operations/purchase.ts";
import { createRecoveryDeps, recoverApiKey, recoveryChallenge } from "../operations/recovery.ts";
import { paymentRequiredHeader, paymentResponseHeader, type PaymentServer } from "../x402/payment.ts";
import { MATCHES_PER_PACK } from "../x402/purchase.ts";
import { BuyBody, RecoverBody, RecoverQuery } from "../x402/schemas.ts";

export { x402Openapi } from "../x402/openapi.ts";

const BODY_LIMIT = 16 * 1024;

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

function settlementFailure(c: Context, reference: string): Response {
  const message = `The payment facilitator did not confirm the settlement: the payment may have been taken and nothing was granted; quote settlement reference ${reference} to support; do not pay again`;
  return c.json({ ...errorBody("INTERNAL_ERROR", message), settlement: reference }, 500);
}

export function x402Routes(deps: X402Deps) {
  const app = new Hono();
  const purchases = createPurchaseDeps(deps, deps.payments);
  const recoveries = createRecoveryDeps(deps);
  const resource = (quantity: number) => ({
    url: `${deps.config.publicUrl}/api/x402/buy`,
    description: `${packs(quantity)} of walletid match credits (${quantity * MATCHES_PER_PACK} matches, valid 12 months)`,
    mimeType: "application/json",
  });

  /** 402 with a fresh challenge for this quantity; `reason` also goes into the challenge's error. */
  async function challenge(c: Context, asked: PaymentRequired) {
    const { payments: server, requirements, quantity, reason, settled } = asked;
    const required = await server.resource.createPaymentRequiredResponse([requirements], resource(quantity), reason ?? "Payment required");
    c.header("PAYMENT-REQUIRED", paymentRequiredHeader(required));
    c.header("Cache-Control", PAYMENT_REQUIRED_CACHE_CONTROL);
    if (settled) c.header("PAYMENT-RESPONSE", paymentResponseHeader(settled));
    const message = reason
      ? `Payment refused (${reason}): sign a new payment of ${dollars(quantity)} for ${packs(quantity)} from the PAYMENT-REQUIRED header`
      : `Payment required: ${dollars(quantity)} for ${packs(quantity)}; pay with the x402 challenge in the PAYMENT-REQUIRED header and resend this request with PAYMENT-SIGNATURE`;
    return c.json(errorBody("PAYMENT_REQUIRED", message), 402);
  }

  app.post("/api/x402/buy", async (c) => {
    const quantity = parseQuantity((await readAtMost(c.req.raw, BODY_LIMIT)) ?? tooLarge("16 KB"));
    const bought = await buyPacks(purchases, credentialOf(c.req.raw), { quantity, paymentSignature: c.req.header("PAYMENT-SIGNATURE") });
    if (!bought.ok) throw bought.refusal;
    switch (bought.kind) {
      case "payment_required":
        return await challenge(c, bought);
      case "settlement_uncertain":
        return settlementFailure(c, bought.reference);
      case "bought":
        c.header("PAYMENT-RESPONSE", paymentResponseHeader(bought.paymentResponse));
        return c.json(bought.body);
    }
  });

  app.get("/api/x402/recover", async (c) => {
    const query = v.safeParse(RecoverQuery, { wallet: c.req.query("wallet") });
    if (!query.success) {
      throw new ApiError(400, "INVALID_ADDRESS", "Invalid wallet: pass ?wallet= with the paying address, 0x followed by 40 hex characters");
    }
    return c.json(await recoveryChallenge(recoveries, { wallet: query.output.wallet }));
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
    const { wallet, issued_at: issuedAt, token, signature } = result.output;
    const recovered = await recoverApiKey(recoveries, { wallet, issuedAt, token, signature, revoke: result.output.revoke_others_and_reissue === true });
    if (!recovered.ok) throw recovered.refusal;
    return c.json({ api_key: recovered.api_key, key_prefix: recovered.key_prefix, revoked_prefixes: recovered.revoked_prefixes });
  });

  return app;
}
