// The x402 side of a purchase: the server's own payment requirements for a quantity of packs, the
// official resource server (@x402/core with the @x402/evm `exact` scheme) that verifies and settles
// through the facilitator, and the reading of a client's PAYMENT-SIGNATURE. Every header on the
// wire has @x402/core's value: ASCII text is base64'd by btoa and atob, the rest by the library.
import { decodePaymentSignatureHeader, encodePaymentRequiredHeader, encodePaymentResponseHeader } from "@x402/core/http";
import { FacilitatorResponseError, HTTPFacilitatorClient, x402ResourceServer } from "@x402/core/server";
import { SettleError, VerifyError, type PaymentPayload, type PaymentRequired, type PaymentRequirements, type SettleResponse, type VerifyResponse } from "@x402/core/types";
import { ExactEvmScheme } from "@x402/evm/exact/server";
import { UptoEvmScheme } from "@x402/evm/upto/server";
import * as v from "valibot";
import type { Config } from "../config.ts";

/** Base mainnet (CAIP-2) and its USDC contract, whose EIP-712 domain is {USD Coin, 2}. */
export const NETWORK = "eip155:8453";
export const USDC_BASE = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913";
export const USDC_DOMAIN = { name: "USD Coin", version: "2" } as const;
/** One Agent pack costs 1.00 USDC (6 decimals). */
export const PACK_PRICE = 1_000_000n;
export const MAX_TIMEOUT_SECONDS = 120;
export const MAX_QUANTITY = 25;

/** The requirements for `quantity` packs, built by the server alone: never from the client's echo. */
export function paymentRequirements(payTo: string, quantity: number): PaymentRequirements {
  return {
    scheme: "exact",
    network: NETWORK,
    asset: USDC_BASE,
    amount: (BigInt(quantity) * PACK_PRICE).toString(),
    payTo,
    maxTimeoutSeconds: MAX_TIMEOUT_SECONDS,
    extra: { ...USDC_DOMAIN },
  };
}

export interface PaymentServer {
  resource: x402ResourceServer;
  /** The facilitator itself, for its /supported (the `upto` kind names the facilitator's address). */
  facilitator: HTTPFacilitatorClient;
  payTo: string;
}

/** The resource server over the facilitator at `facilitatorUrl` (its /verify, /settle, /supported): `exact` and `upto`. */
export function createPaymentServer(options: { facilitatorUrl: string; payTo: string; timeoutMs: number }): PaymentServer {
  const facilitator = new HTTPFacilitatorClient({ url: options.facilitatorUrl, timeoutMs: options.timeoutMs });
  const resource = new x402ResourceServer(facilitator).register(NETWORK, new ExactEvmScheme()).register(NETWORK, new UptoEvmScheme());
  return { resource, facilitator, payTo: options.payTo };
}

/** The resource server X402_FACILITATOR_URL and X402_PAY_TO configure; undefined when either is unset. */
export function paymentServerOf(config: Config): PaymentServer | undefined {
  const { x402FacilitatorUrl: facilitatorUrl, x402PayTo: payTo } = config.upstreams;
  return facilitatorUrl && payTo ? createPaymentServer({ facilitatorUrl, payTo, timeoutMs: config.jobs.upstreamTimeoutMs }) : undefined;
}

const Address = v.pipe(v.string(), v.regex(/^0x[0-9a-fA-F]{40}$/));
const Uint = v.pipe(v.string(), v.regex(/^\d{1,78}$/));

const Eip3009Payload = v.object({
  signature: v.pipe(v.string(), v.regex(/^0x(?:[0-9a-fA-F]{2})+$/)),
  authorization: v.object({
    from: Address,
    to: Address,
    value: Uint,
    validAfter: Uint,
    validBefore: Uint,
    nonce: v.pipe(v.string(), v.regex(/^0x[0-9a-fA-F]{64}$/)),
  }),
});

export type Authorization = v.InferOutput<typeof Eip3009Payload>["authorization"];

export type DecodedPayment =
  | { ok: true; payload: PaymentPayload; authorization: Authorization; signature: string }
  | { ok: false; reason: string };

const NonEmpty = v.pipe(v.string(), v.minLength(1));
const Extensions = v.nullish(v.record(v.string(), v.unknown()));

/**
 * The x402 version 2 payment payload, as @x402/core's PaymentPayloadV2Schema states it (its
 * isPaymentPayloadV2 is a zod parse that took a fifth of a paid call's own time): the scheme's
 * part (`payload`) is any object here, each scheme's reader checks its own.
 */
const PaymentPayloadV2 = v.object({
  x402Version: v.literal(2),
  resource: v.nullish(v.looseObject({ url: NonEmpty })),
  accepted: v.looseObject({
    scheme: NonEmpty,
    network: v.pipe(v.string(), v.minLength(3), v.includes(":")),
    amount: NonEmpty,
    asset: NonEmpty,
    payTo: NonEmpty,
    maxTimeoutSeconds: v.pipe(v.number(), v.gtValue(0)),
    extra: Extensions,
  }),
  payload: v.record(v.string(), v.unknown()),
  extensions: Extensions,
});

// @x402/core carries every header as base64 of the UTF-8 bytes of JSON, and goes through those
// bytes one at a time both ways. For ASCII text the bytes are the string's own characters, so
// btoa and atob alone give the same values, several times sooner; anything else takes the library's way.
const ASCII = /^[\x00-\x7f]*$/;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** A PAYMENT-SIGNATURE header read as an x402 v2 payment payload, its scheme's part not yet checked. */
export function readPaymentHeader(header: string): { ok: true; payload: PaymentPayload } | { ok: false; reason: string } {
  const text = header.trim();
  let payload: unknown;
  try {
    // what decodePaymentSignatureHeader accepts, and nothing else
    if (!BASE64.test(text)) throw new Error("not base64");
    const binary = atob(text);
    payload = ASCII.test(binary) ? JSON.parse(binary) : decodePaymentSignatureHeader(text);
  } catch {
    return { ok: false, reason: "it is not base64-encoded JSON" };
  }
  if (!v.is(PaymentPayloadV2, payload)) return { ok: false, reason: "it is not an x402 version 2 payment payload" };
  // the payload as the client sent it, every field kept, for the facilitator
  return { ok: true, payload: payload as PaymentPayload };
}

/** The PAYMENT-REQUIRED header's value, as encodePaymentRequiredHeader writes it. */
export function paymentRequiredHeader(required: PaymentRequired): string {
  return base64Json(JSON.stringify(required), () => encodePaymentRequiredHeader(required));
}

/** The PAYMENT-RESPONSE header's value, as encodePaymentResponseHeader writes it: without the facilitator's extension responses. */
export function paymentResponseHeader(response: SettleResponse): string {
  const { extensionResponses: _, ...buyerFacing } = response as SettleResponse & { extensionResponses?: unknown };
  return base64Json(JSON.stringify(buyerFacing), () => encodePaymentResponseHeader(response));
}

/** base64 of JSON text by btoa when it is ASCII, else the library's `encode`. */
function base64Json(json: string, encode: () => string): string {
  return ASCII.test(json) ? btoa(json) : encode();
}

/** A PAYMENT-SIGNATURE header read as an x402 v2 payload carrying an EIP-3009 authorization. */
export function decodePayment(header: string): DecodedPayment {
  const read = readPaymentHeader(header);
  if (!read.ok) return read;
  const payload = read.payload;
  const inner = v.safeParse(Eip3009Payload, payload.payload);
  if (!inner.success) return { ok: false, reason: "its payload is not a signed EIP-3009 transfer authorization" };
  return { ok: true, payload, authorization: inner.output.authorization, signature: inner.output.signature.toLowerCase() };
}

/** What the replay protection records: the tuple the token contract itself enforces, lowercased. */
export interface ReplayKey {
  network: string;
  asset: string;
  payer: string;
  nonce: string;
}

export function replayKey(requirements: PaymentRequirements, authorization: Authorization): ReplayKey {
  return {
    network: requirements.network.toLowerCase(),
    asset: requirements.asset.toLowerCase(),
    payer: authorization.from.toLowerCase(),
    nonce: authorization.nonce.toLowerCase(),
  };
}

export type VerifyOutcome = { ok: true } | { ok: false; reason: string } | { ok: false; unavailable: string };

/** Verification at the facilitator: refusals are values; a facilitator that cannot answer is `unavailable`. */
export async function verifyPayment(server: PaymentServer, payload: PaymentPayload, requirements: PaymentRequirements): Promise<VerifyOutcome> {
  let result: VerifyResponse;
  try {
    result = await server.resource.verifyPayment(payload, requirements);
  } catch (err) {
    // a non-2xx answer that still says why the payment is invalid is a refusal, not an outage
    if (err instanceof VerifyError && err.statusCode < 500 && err.invalidReason) return { ok: false, reason: err.invalidReason };
    return { ok: false, unavailable: describe(err) };
  }
  if (result.isValid) return { ok: true };
  return { ok: false, reason: result.invalidReason ?? "invalid_payment" };
}

/**
 * What settlement did, from the server's point of view:
 *   settled  the facilitator says the transfer went through
 *   failed   refused without a transaction: nothing can have moved
 *   unknown  the transfer may have reached the chain (timeout, 5xx, pending, a failure with a
 *            transaction hash): the claim is kept and never granted again automatically
 */
export type SettleOutcome =
  | { state: "settled"; response: SettleResponse }
  | { state: "failed"; reason: string; response: SettleResponse }
  | { state: "unknown"; reason: string; response?: SettleResponse };

/** Settles the payment; `amount` (atomic units, at most the requirements' amount) settles less, for `upto`. */
export async function settlePayment(server: PaymentServer, payload: PaymentPayload, requirements: PaymentRequirements, amount?: bigint): Promise<SettleOutcome> {
  let response: SettleResponse;
  try {
    const overrides = amount === undefined ? undefined : { amount: amount.toString() };
    response = await server.resource.settlePayment(payload, requirements, undefined, undefined, overrides);
  } catch (err) {
    if (err instanceof SettleError) {
      const failure: SettleResponse = {
        success: false,
        errorReason: err.errorReason,
        transaction: err.transaction ?? "",
        network: err.network ?? requirements.network,
        payer: err.payer,
      };
      if (err.statusCode < 500 && !err.transaction) return { state: "failed", reason: err.errorReason ?? "settlement_failed", response: failure };
      return { state: "unknown", reason: err.errorReason ?? `facilitator answered HTTP ${err.statusCode}`, response: failure };
    }
    return { state: "unknown", reason: describe(err) };
  }
  if (response.success) return { state: "settled", response };
  const reason = response.errorReason ?? "settlement_failed";
  if (response.transaction || reason === "settlement_pending") return { state: "unknown", reason, response };
  return { state: "failed", reason, response };
}

function describe(err: unknown): string {
  if (err instanceof FacilitatorResponseError) return err.message;
  const cause = (err as { cause?: { code?: string } })?.cause?.code;
  return cause ? `${(err as Error).message} (${cause})` : err instanceof Error ? err.message : String(err);
}
