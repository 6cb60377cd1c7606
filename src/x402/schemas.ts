// The wire shapes of the purchase and recovery endpoints (valibot): the routes validate with them
// and the OpenAPI document is generated from them.
import * as v from "valibot";
import { Address } from "../index/address.ts";
import { MAX_QUANTITY } from "./payment.ts";

const Count = v.pipe(v.number(), v.integer(), v.minValue(0));
const KeyPrefix = v.pipe(v.string(), v.description("The key's first 12 characters, e.g. wid_live_Ab3"));

export const BuyBody = v.strictObject({
  quantity: v.optional(
    v.pipe(
      v.number(),
      v.integer(),
      v.minValue(1),
      v.maxValue(MAX_QUANTITY),
      v.description(`Agent packs to buy, 1 to ${MAX_QUANTITY} (default 1); send the same body on the paid retry`),
    ),
  ),
});

export const LoyaltyBonus = v.strictObject({
  purchase_count: v.pipe(Count, v.description("The paying wallet's settled purchases, this one included (a multiple of 10)")),
  matches_added: v.pipe(Count, v.description("Matches of the bonus pack, on top of matches_added")),
});

export const PurchaseResponse = v.strictObject({
  api_key: v.pipe(v.nullable(v.string()), v.description("The new key, shown once (only its hash is stored); null on a top-up, on a replay, and when the wallet already holds three active keys")),
  shown_once: v.pipe(v.boolean(), v.description("true when api_key carries a key")),
  matches_added: v.pipe(Count, v.description("12 per pack bought")),
  quantity: Count,
  matches_available: v.pipe(v.number(), v.description("The credited account's match credits now")),
  pack: v.literal("Agent"),
  newly_granted: v.pipe(v.boolean(), v.description("false when this payment was granted before (a replay): nothing was added")),
  credited_to_key_prefix: v.optional(KeyPrefix),
  loyalty_bonus: v.optional(LoyaltyBonus),
});

export const RecoverQuery = v.object({ wallet: v.pipe(Address, v.description("The wallet that paid")) });

export const RecoveryChallenge = v.strictObject({
  message: v.pipe(v.string(), v.description("The text to sign with personal_sign (EIP-191), exactly as returned")),
  issued_at: v.pipe(v.string(), v.isoTimestamp(), v.description("When the challenge was issued; it is valid five minutes")),
  token: v.pipe(v.string(), v.description("Send back unchanged with the signature")),
});

export const RecoverBody = v.strictObject({
  wallet: Address,
  issued_at: v.string(),
  token: v.string(),
  signature: v.pipe(v.string(), v.description("The wallet's personal_sign signature over the challenge's message (hex)")),
  revoke_others_and_reissue: v.optional(
    v.pipe(v.boolean(), v.description("At three active keys: revoke every active key of the account and issue one new key, atomically")),
  ),
});

export const RecoveryResponse = v.strictObject({
  api_key: v.pipe(v.string(), v.description("The new key, shown once")),
  key_prefix: KeyPrefix,
  revoked_prefixes: v.pipe(v.array(KeyPrefix), v.description("Keys revoked by revoke_others_and_reissue; [] on a plain recovery")),
});

/** A 500 of the purchase endpoint may carry the settlement reference to quote to support. */
export const SettlementError = v.strictObject({
  error: v.string(),
  code: v.picklist(["INTERNAL_ERROR"]),
  settlement: v.optional(v.pipe(v.string(), v.uuid(), v.description("The payment's reference: it may have settled and was not granted; support grants it once"))),
});
