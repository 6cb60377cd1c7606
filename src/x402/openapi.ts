// What the OpenAPI document and /docs say about the purchase and recovery endpoints.
import * as v from "valibot";
import type { Operation } from "../openapi/operation.ts";
import { BuyBody, PurchaseResponse, RecoverBody, RecoverQuery, RecoveryChallenge, RecoveryResponse, SettlementError } from "./schemas.ts";

export const x402Openapi: Operation[] = [
  {
    method: "post",
    path: "/api/x402/buy",
    site: true,
    operationId: "buyCredits",
    tag: "Purchase and recovery",
    summary: "Buy match credits over x402 (no account)",
    description:
      "Agent packs (12 matches each, valid 12 months, 1.00 USDC each, no volume discount) paid with the x402 version 2 protocol (`exact` scheme, EIP-3009 on Base, `eip155:8453`, USDC `0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913`). " +
      "Unpaid, the request answers 402 with the challenge in the `PAYMENT-REQUIRED` header (amount = quantity × 1000000, `maxTimeoutSeconds` 120, `extra` {name: \"USD Coin\", version: \"2\"}); resend the same body with `PAYMENT-SIGNATURE` (any official x402 client does this). " +
      "The payment is verified and settled through the facilitator, and only after settlement is the pack granted and a key minted, shown once. A replay of an already granted authorization answers 200 with `newly_granted: false` and no key. " +
      "Top-up: an API key in `Authorization` credits that key's account and mints no key (`api_key: null`, `credited_to_key_prefix`); an OAuth access token is 403 OAUTH_CANNOT_BUY, any other value 401 INVALID_TOPUP_KEY, both before a 402. " +
      "Every 10th settled purchase of a paying wallet adds one Agent pack (`loyalty_bonus`). Accounts created by purchase have no free allowance and cannot use reverse farcaster. A 500 carrying `settlement` means the payment may have settled and the pack was not recorded: support grants that reference once.",
    auth: false,
    headers: {
      Authorization: v.pipe(v.string(), v.description("Optional: an API key (Bearer wid_live_... or the bare key) whose account this purchase tops up")),
      "PAYMENT-SIGNATURE": v.pipe(v.string(), v.description("The paid retry: base64 of the x402 version 2 PaymentPayload (an EIP-3009 transferWithAuthorization signature)")),
    },
    body: BuyBody,
    success: { status: 200, description: "The packs granted (or, on a replay, granted before)", schema: PurchaseResponse, headers: ["PAYMENT-RESPONSE"] },
    errors: [
      { status: 400, codes: ["INVALID_REQUEST", "INVALID_PAYMENT"] },
      { status: 401, codes: ["INVALID_TOPUP_KEY"] },
      {
        status: 402,
        codes: ["PAYMENT_REQUIRED"],
        headers: ["PAYMENT-REQUIRED", "PAYMENT-RESPONSE"],
        description: "Payment required: the x402 challenge is in PAYMENT-REQUIRED (or a payment was refused, the reason in the body and PAYMENT-RESPONSE)",
      },
      { status: 403, codes: ["OAUTH_CANNOT_BUY"] },
      { status: 409, codes: ["KEY_CAP_REACHED"] },
      { status: 413, codes: ["INVALID_REQUEST"] },
      { status: 500, codes: ["INTERNAL_ERROR"], schema: SettlementError },
      { status: 503, codes: ["SERVICE_UNAVAILABLE"] },
    ],
  },
  {
    method: "get",
    path: "/api/x402/recover",
    site: true,
    operationId: "recoveryChallenge",
    tag: "Purchase and recovery",
    summary: "Challenge for recovering a key by wallet signature",
    description:
      "A message naming walletid, the wallet, the time and the site, to sign with the paying wallet (EIP-191 personal_sign), and a token to send back; valid five minutes. The answer is the same for every well-formed address, so it reveals nothing about the wallet.",
    auth: false,
    query: RecoverQuery,
    success: { status: 200, description: "The challenge", schema: RecoveryChallenge },
    errors: [{ status: 400, codes: ["INVALID_ADDRESS"] }],
  },
  {
    method: "post",
    path: "/api/x402/recover",
    site: true,
    operationId: "recoverKey",
    tag: "Purchase and recovery",
    summary: "Recover a key by wallet signature",
    description:
      "Send back the challenge with the wallet's signature over its message: a new key is issued on the account the wallet paid for (credits belong to the account, not the key). At most three active keys per wallet: at the cap the answer is 409 KEY_CAP_REACHED, and a fresh challenge sent with `revoke_others_and_reissue: true` revokes every active key of the account and issues one, atomically (`revoked_prefixes`). A challenge works once. Ordinary accounts are checked by ECDSA recovery; smart-wallet (ERC-1271) signatures when the server has ETH_RPC_URL.",
    auth: false,
    body: RecoverBody,
    success: { status: 200, description: "The new key, shown once", schema: RecoveryResponse },
    errors: [
      { status: 400, codes: ["INVALID_REQUEST", "INVALID_ADDRESS", "INVALID_CHALLENGE"] },
      { status: 401, codes: ["INVALID_SIGNATURE"] },
      { status: 404, codes: ["NOT_FOUND"] },
      { status: 409, codes: ["KEY_CAP_REACHED"] },
      { status: 503, codes: ["SERVICE_UNAVAILABLE"] },
    ],
  },
];
