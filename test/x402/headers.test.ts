// The x402 headers walletid writes and reads itself (src/x402/payment.ts): the same values as
// @x402/core's encoders and decoder, for ASCII text (btoa and atob alone) and for any other.
import assert from "node:assert/strict";
import { test } from "node:test";
import { decodePaymentSignatureHeader, encodePaymentRequiredHeader, encodePaymentResponseHeader, encodePaymentSignatureHeader } from "@x402/core/http";
import type { PaymentPayload, PaymentRequired, PaymentRequirements, SettleResponse } from "@x402/core/types";
import { paymentRequiredHeader, paymentResponseHeader, readPaymentHeader } from "../../src/x402/payment.ts";

const requirements: PaymentRequirements = {
  scheme: "upto",
  network: "eip155:8453",
  asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
  amount: "83334",
  payTo: "0x5e11e5000000000000000000000000000000a402",
  maxTimeoutSeconds: 120,
  extra: { name: "USD Coin", version: "2" },
};

const required = (description: string): PaymentRequired => ({
  x402Version: 2,
  error: "Payment required",
  resource: { url: "https://walletid.example/api/v1/wallet/0x0000000000000000000000000000000000000001", description, mimeType: "application/json" },
  accepts: [requirements],
});

test("PAYMENT-REQUIRED: the library's value, ASCII or not", () => {
  for (const description of ["walletid: one wallet", "walletid: l'identité d'un portefeuille ✓"]) {
    assert.equal(paymentRequiredHeader(required(description)), encodePaymentRequiredHeader(required(description)));
  }
});

test("PAYMENT-RESPONSE: the library's value, without the facilitator's extension responses", () => {
  const response = {
    success: true,
    transaction: "0xabc",
    network: "eip155:8453",
    payer: "0x0000000000000000000000000000000000000002",
    amount: "83334",
    extensionResponses: { bazaar: { note: "for the server" } },
  } as SettleResponse;
  assert.equal(paymentResponseHeader(response), encodePaymentResponseHeader(response));
  assert.equal(JSON.parse(atob(paymentResponseHeader(response))).extensionResponses, undefined);
  const withAccent = { ...response, errorMessage: "refusé" } as SettleResponse;
  assert.equal(paymentResponseHeader(withAccent), encodePaymentResponseHeader(withAccent));
});

test("PAYMENT-SIGNATURE: read as the library reads it, ASCII or not; what it refuses is refused", () => {
  for (const description of ["one wallet", "un portefeuille ✓"]) {
    const payload = {
      x402Version: 2,
      resource: { url: "https://walletid.example/api/v1/wallet/0x01", description },
      accepted: requirements,
      payload: { signature: "0x01" },
    } as PaymentPayload;
    const header = encodePaymentSignatureHeader(payload);
    const read = readPaymentHeader(header);
    assert.ok(read.ok);
    assert.deepEqual(read.payload, decodePaymentSignatureHeader(header));
  }
  // atob alone would take these; the library does not
  const ascii = encodePaymentSignatureHeader({ x402Version: 2, accepted: requirements, payload: {} } as PaymentPayload);
  for (const bad of [`${ascii.slice(0, 8)} ${ascii.slice(8)}`, `${ascii.slice(0, 8)}\n${ascii.slice(8)}`, "%%%"]) {
    assert.throws(() => decodePaymentSignatureHeader(bad));
    assert.deepEqual(readPaymentHeader(bad), { ok: false, reason: "it is not base64-encoded JSON" });
  }
  const v1 = btoa(JSON.stringify({ x402Version: 1, scheme: "exact", network: "base", payload: {} }));
  assert.deepEqual(readPaymentHeader(v1), { ok: false, reason: "it is not an x402 version 2 payment payload" });
});
