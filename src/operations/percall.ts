// Paying per call over x402 (`upto`): a keyless metered call answers a challenge for its ceiling;
// paid, it is verified while it is claimed once and run, and then settled for the matches it
// billed, before the answer is sent. A miss settles nothing. Faces: GET /wallet/{address}, POST /batch, GET /reverse/twitter.
import type { PaymentRequirements, SettleResponse } from "@x402/core/types";
import { ApiError } from "../http/errors.ts";
import type { Metered, Meterer } from "../http/meter.ts";
import { paymentServerOf, settlePayment, verifyPayment, type PaymentServer } from "../x402/payment.ts";
import { callReplayKey, callRequirements, decodeCallPayment, facilitatorAddress, PaidMeterer, PaymentAlreadyUsed, recordCall, releaseCall } from "../x402/percall.ts";
import type { OperationDeps } from "./deps.ts";
import type { Outcome } from "./outcome.ts";

export interface PerCallDeps extends OperationDeps {
  /** The resource server; undefined when x402 is off (then keyless calls stay 401). */
  payments: PaymentServer | undefined;
  /** Atomic units a billed match costs (X402_MATCH_PRICE). */
  price: bigint;
  /** The outcome records started after their answers and not yet written (see recordsWritten). */
  records: Set<Promise<void>>;
}

/** The per-call payment dependencies: the resource server given, or the one X402_FACILITATOR_URL and X402_PAY_TO configure. */
export function createPerCallDeps(deps: OperationDeps, payments?: PaymentServer): PerCallDeps {
  return { ...deps, payments: payments ?? paymentServerOf(deps.config), price: deps.config.upstreams.x402MatchPrice, records: new Set() };
}

/**
 * Waits for the outcome records already started: the app's close calls it before the database
 * closes, so a graceful stop right after a paid answer leaves no row `claimed`.
 */
export async function recordsWritten(deps: PerCallDeps): Promise<void> {
  await Promise.all(deps.records);
}

/** A paid call as the face describes it. */
export interface PaidCall<T extends object> {
  /** Route template, recorded on the ledger row. */
  route: string;
  /** The most matches the call can bill: the ceiling the payer signs is this times the price. */
  maxMatches: number;
  /** The PAYMENT-SIGNATURE sent, if any. */
  paymentSignature?: string;
  /** The operation, metered by the paying wallet. */
  run: (meterer: Meterer) => Promise<Outcome<T & { metered: Metered }>>;
  /** The matches the answer bills (a batch: meta.matched; a reverse page: its wallets). */
  billed: (result: T & { metered: Metered }) => number;
}

/** What the payer is asked to sign: a fresh challenge; `reason` says why the last payment was refused. */
export interface CallPaymentRequired {
  kind: "payment_required";
  /** Time spent waiting on the facilitator, in milliseconds (for Server-Timing). */
  facilitatorMs: number;
  payments: PaymentServer;
  requirements: PaymentRequirements;
  reason?: string;
  settled?: SettleResponse;
}

export type PaidCallResult<T extends object> =
  | CallPaymentRequired
  /** The answer; `paymentResponse` when money moved (absent for a miss). */
  | { kind: "answered"; result: T & { metered: Metered }; matches: number; amount: bigint; paymentResponse?: SettleResponse; facilitatorMs: number }
  /** The operation's own refusal (bad input, rate limit): nothing was settled. */
  | { kind: "refused"; refusal: ApiError };

const unavailable = (what: string) =>
  new ApiError(503, "SERVICE_UNAVAILABLE", `The payment facilitator ${what}: nothing was charged; retry shortly`, { "Retry-After": "5" });

/**
 * Records a call's outcome once its answer has gone out, not before: the claim, durable before any
 * settlement, already holds the call. A record that fails leaves the row `claimed`, and
 * reconciliation (admin x402 calls) finds it.
 */
function recordAfter(deps: PerCallDeps, outcome: Parameters<typeof recordCall>[1]): void {
  // a task of its own: the answer is written first
  const record: Promise<void> = new Promise((resolve) => setTimeout(resolve, 0))
    .then(() => recordCall(deps.db, outcome))
    .then(
      () => {},
      (err) => {
        deps.log(
          `x402 paid call ${outcome.id}${outcome.txHash ? ` (tx ${outcome.txHash})` : ""} ${outcome.state} but not recorded: ${err instanceof Error ? err.message : String(err)}`,
          "error",
        );
      },
    )
    .finally(() => deps.records.delete(record));
  deps.records.add(record);
}

/**
 * Runs one call paid over x402. The order (challenge; payment; verification at the ceiling, and
 * beside it the claim, the metering and the work; settlement of what was billed; the answer, and
 * beside it the outcome's record) means money moves only for an answer that is then sent, and one
 * payment runs one call, whichever process sees it.
 */
export async function payPerCall<T extends object>(deps: PerCallDeps, call: PaidCall<T>): Promise<PaidCallResult<T>> {
  const payments = deps.payments!;
  // the facilitator's share of the call's time, kept apart from the service's own: each round trip
  // from the call into the resource server to its return, the HTTP client's work at both ends included
  let facilitatorMs = 0;
  const timed = async <R>(work: () => Promise<R>): Promise<R> => {
    const started = performance.now();
    try {
      return await work();
    } finally {
      facilitatorMs += performance.now() - started;
    }
  };
  const facilitator = await timed(() => facilitatorAddress(payments));
  if (!facilitator) throw unavailable("cannot be reached");
  const requirements = callRequirements(payments.payTo, facilitator, deps.price, Math.max(1, call.maxMatches));
  const asked = (more: { reason?: string; settled?: SettleResponse } = {}): CallPaymentRequired => ({
    kind: "payment_required",
    payments,
    requirements,
    facilitatorMs,
    ...more,
  });
  if (!call.paymentSignature) return asked();

  const decoded = decodeCallPayment(call.paymentSignature);
  if (!decoded.ok) throw new ApiError(400, "INVALID_PAYMENT", `Cannot read PAYMENT-SIGNATURE: ${decoded.reason}`);
  // the server's own requirements for this call, never the client's echo
  const matched = payments.resource.findMatchingRequirements([requirements], decoded.payload);
  if (!matched) return asked({ reason: "no_matching_payment_requirements" });

  const id = crypto.randomUUID();
  const key = callReplayKey(matched, decoded);
  // the payment is claimed by the call's metering statement, once across processes
  const meterer = new PaidMeterer(deps.db, deps.now, {
    id,
    key,
    signature: decoded.signature,
    payTo: matched.payTo,
    route: call.route,
    maxAmount: matched.amount,
  });
  // The claim and the work run beside the verification, so that the database's round trip hides
  // behind the facilitator's; nothing is answered or settled before both are done. A payment the
  // facilitator refuses gives its claim and its rate units back.
  const [verified, ran] = await Promise.all([
    timed(() => verifyPayment(payments, decoded.payload, matched)),
    call.run(meterer).then(
      (outcome) => ({ outcome }),
      (error: unknown) => ({ error }),
    ),
  ]);
  if (!verified.ok) {
    if (meterer.claimed) {
      await releaseCall(deps.db, id, meterer.counted).catch((err) => {
        // the row stays claimed: reconciliation finds it unspent on chain
        deps.log(`x402 paid call ${id}: cannot give back the claim of a refused payment: ${err instanceof Error ? err.message : String(err)}`, "error");
      });
    }
    if ("unavailable" in verified) {
      deps.log(`x402 per call verify: the facilitator is unavailable: ${verified.unavailable}`, "warn");
      throw unavailable("is unavailable");
    }
    return asked({ reason: verified.reason });
  }
  if ("error" in ran) {
    if (ran.error instanceof PaymentAlreadyUsed) return asked({ reason: "payment_already_used" });
    if (meterer.claimed) await recordCall(deps.db, { id, state: "refused", reason: "the call failed", now: deps.now() }).catch(() => {});
    throw ran.error;
  }
  const outcome = ran.outcome;
  if (!outcome.ok) {
    if (meterer.claimed) await recordCall(deps.db, { id, state: "refused", reason: outcome.refusal.code, now: deps.now() });
    return { kind: "refused", refusal: outcome.refusal };
  }
  // every paid operation meters before it answers: an answer without a claim would be unpaid
  if (!meterer.claimed) throw new Error(`the paid call on ${call.route} answered without metering`);

  const matches = call.billed(outcome);
  const amount = deps.price * BigInt(matches);
  if (matches === 0) {
    // a miss costs nothing: no settlement, the authorization is left unused
    recordAfter(deps, { id, state: "free", matches: 0, amount: 0n, now: deps.now() });
    return { kind: "answered", result: outcome, matches, amount, facilitatorMs };
  }

  const settled = await timed(() => settlePayment(payments, decoded.payload, matched, amount));
  if (settled.state === "failed") {
    await recordCall(deps.db, { id, state: "failed", matches, reason: settled.reason, now: deps.now() });
    return asked({ reason: settled.reason, settled: settled.response });
  }
  if (settled.state === "unknown") {
    deps.log(`x402 paid call ${id}: settlement outcome unknown (${settled.reason}); kept for reconciliation (admin x402 calls)`, "warn");
    await recordCall(deps.db, { id, state: "unknown", matches, amount, txHash: settled.response?.transaction, reason: settled.reason, now: deps.now() }).catch(() => {});
    throw new ApiError(
      503,
      "SERVICE_UNAVAILABLE",
      `The payment facilitator did not confirm the settlement, so nothing is answered; the payment is kept as ${id} for reconciliation; retry with a new payment shortly`,
      { "Retry-After": "5" },
    );
  }
  const response = settled.response;
  recordAfter(deps, { id, state: "settled", matches, amount, txHash: response.transaction, now: deps.now() });
  return { kind: "answered", result: outcome, matches, amount, paymentResponse: response, facilitatorMs };
}
