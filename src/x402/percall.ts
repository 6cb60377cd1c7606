// The x402 side of a call paid per call: the `upto` requirements (the payer signs a ceiling, the
// server settles the matches the answer billed), the reading of an upto PAYMENT-SIGNATURE, the
// claim that lets one payment run one call across processes, the per-call revenue ledger, and the
// metering of a paying wallet (its Developer-preset windows; no account, no debit).
import type { PaymentPayload, PaymentRequirements } from "@x402/core/types";
import * as v from "valibot";
import type { Db } from "../db/types.ts";
import { sql } from "../db/queries.ts";
import type { IdentityRow } from "../index/records.ts";
import { ApiError } from "../http/errors.ts";
import { windowsAt, type Metered, type Meterer, type MeterOptions } from "../http/meter.ts";
import { MAX_TIMEOUT_SECONDS, NETWORK, readPaymentHeader, USDC_BASE, USDC_DOMAIN, type PaymentServer, type ReplayKey } from "./payment.ts";

/** The requirements of a paid call that may bill up to `maxMatches` matches at `price` each. */
export function callRequirements(payTo: string, facilitatorAddress: string, price: bigint, maxMatches: number): PaymentRequirements {
  return {
    scheme: "upto",
    network: NETWORK,
    asset: USDC_BASE,
    amount: (price * BigInt(maxMatches)).toString(),
    payTo,
    maxTimeoutSeconds: MAX_TIMEOUT_SECONDS,
    extra: { ...USDC_DOMAIN, assetTransferMethod: "permit2", facilitatorAddress },
  };
}

// the facilitator's address per facilitator, from its /supported: the upto permit names it
const facilitatorAddresses = new WeakMap<PaymentServer, Promise<string>>();

/**
 * The address the facilitator settles upto payments from, read once from its /supported; a
 * facilitator that cannot answer is `undefined` (the caller answers 503) and is asked again next time.
 */
export async function facilitatorAddress(server: PaymentServer): Promise<string | undefined> {
  let known = facilitatorAddresses.get(server);
  if (!known) {
    known = server.facilitator.getSupported().then((supported) => {
      const kind = supported.kinds.find((k) => k.x402Version === 2 && k.scheme === "upto" && k.network === NETWORK);
      const address = kind?.extra?.facilitatorAddress ?? supported.signers?.["eip155:*"]?.[0];
      if (typeof address !== "string" || !/^0x[0-9a-fA-F]{40}$/.test(address)) throw new Error("the facilitator does not settle upto on Base");
      return address;
    });
    facilitatorAddresses.set(server, known);
  }
  try {
    return await known;
  } catch {
    facilitatorAddresses.delete(server);
    return undefined;
  }
}

const Address = v.pipe(v.string(), v.regex(/^0x[0-9a-fA-F]{40}$/));
const Uint = v.pipe(v.string(), v.regex(/^\d{1,78}$/));

const UptoPayload = v.object({
  signature: v.pipe(v.string(), v.regex(/^0x(?:[0-9a-fA-F]{2})+$/)),
  permit2Authorization: v.object({
    from: Address,
    permitted: v.object({ token: Address, amount: Uint }),
    spender: Address,
    nonce: Uint,
    deadline: Uint,
    witness: v.object({ to: Address, facilitator: Address, validAfter: Uint }),
  }),
});

export type DecodedCallPayment =
  | { ok: true; payload: PaymentPayload; payer: string; nonce: string; signature: string }
  | { ok: false; reason: string };

/** A PAYMENT-SIGNATURE header read as an x402 v2 payload carrying an upto Permit2 authorization. */
export function decodeCallPayment(header: string): DecodedCallPayment {
  const read = readPaymentHeader(header);
  if (!read.ok) return read;
  const inner = v.safeParse(UptoPayload, read.payload.payload);
  if (!inner.success) return { ok: false, reason: "its payload is not a signed upto Permit2 authorization" };
  const auth = inner.output.permit2Authorization;
  return { ok: true, payload: read.payload, payer: auth.from.toLowerCase(), nonce: auth.nonce, signature: inner.output.signature.toLowerCase() };
}

export function callReplayKey(requirements: PaymentRequirements, payment: { payer: string; nonce: string }): ReplayKey {
  return { network: requirements.network.toLowerCase(), asset: requirements.asset.toLowerCase(), payer: payment.payer, nonce: payment.nonce };
}

/** What claiming a paid call's payment writes: the call's row under its replay key. */
export interface CallClaim {
  id: string;
  key: ReplayKey;
  signature: string;
  payTo: string;
  route: string;
  maxAmount: string;
}

/** The payment was presented before (by any process): the call does not run. */
export class PaymentAlreadyUsed extends Error {
  constructor() {
    super("the payment was presented before");
  }
}

export type CallState = "free" | "refused" | "failed" | "unknown" | "settled";

export interface CallRecord {
  id: string;
  state: CallState;
  payer: string;
  route: string;
  matches: number | null;
  amount: string | null;
  tx_hash: string | null;
}

/** Records what became of a claimed (or unknown) call; undefined when it was already final. */
export async function recordCall(
  db: Db,
  params: { id: string; state: CallState; matches?: number; amount?: bigint; txHash?: string; reason?: string; now: Date },
): Promise<CallRecord | undefined> {
  const [row] = await db.query<CallRecord & Record<string, unknown>>(sql("x402_calls_record_outcome"), [
    params.id,
    params.state,
    params.matches ?? null,
    params.amount?.toString() ?? null,
    params.txHash || null,
    params.reason ?? null,
    params.now,
  ]);
  return row;
}

/**
 * Gives back the claim of a call whose payment the facilitator did not verify, with the `units` its
 * claim counted against the paying wallet: the same payment may be presented again. Whether a claim was given back.
 */
export async function releaseCall(db: Db, id: string, units: number): Promise<boolean> {
  return (await db.query(sql("x402_calls_release"), [id, units])).length > 0;
}

/** A paid call whose settlement outcome is not known, for an operator to check on chain. */
export interface OpenCall {
  id: string;
  state: "claimed" | "unknown";
  payer: string;
  route: string;
  max_amount: string;
  matches: number | null;
  amount: string | null;
  tx_hash: string | null;
  reason: string | null;
  claimed_at: Date;
}

/** Calls `unknown`, and calls still `claimed` after two settlement timeouts (their process stopped). */
export async function openCalls(db: Db, now: Date): Promise<OpenCall[]> {
  return await db.query<OpenCall & Record<string, unknown>>(sql("x402_calls_select_open"), [new Date(now.getTime() - 2 * MAX_TIMEOUT_SECONDS * 1000)]);
}

/** Per-call revenue by route since `since`: settled calls, the matches they billed and the atomic units that moved. */
export async function revenueSince(db: Db, since: Date): Promise<Array<{ route: string; calls: number; matches: number; amount: string }>> {
  return await db.query(sql("x402_calls_select_revenue"), [since]);
}

type BeginRow = IdentityRow & {
  outcome: "ok" | "rate_limited" | "batch_too_large";
  limit_minute: number | null;
  limit_day: number | null;
  limit_month: number | null;
  max_batch_size: number | null;
  used_minute: number;
  used_day: number;
  used_month: number;
};

/**
 * The metering of a call paid over x402, with the claim of its payment: one statement claims the
 * payment (once across processes; PaymentAlreadyUsed otherwise), counts the call against the paying
 * wallet's windows under the Developer preset (x402_payer_windows, so the limit holds across
 * processes), and reads its identity rows, so that the matches it would bill are counted as the
 * key-metered call counts them. Nothing is debited: the payment is the bill. A refusal (weight 0)
 * counts nothing. An operation that refuses before it meters (bad input) claims nothing. It runs
 * beside the payment's verification: a payment then refused gives back the claim and `counted`.
 */
export class PaidMeterer implements Meterer {
  /** Whether meter() claimed the payment (undefined: it was never called). */
  claimed: boolean | undefined;
  /** The rate units the claim counted against the paying wallet (0 when it was refused). */
  counted = 0;

  constructor(
    private readonly db: Db,
    private readonly now: () => Date,
    private readonly claim: CallClaim,
  ) {}

  /** No key: a paid call reads what a caller without one may read. */
  async digest(): Promise<string | null> {
    return null;
  }

  async meter(options: MeterOptions): Promise<Metered> {
    const now = this.now();
    const resets = windowsAt(now);
    const { id, key, signature, payTo, route, maxAmount } = this.claim;
    const rows = await this.db.query<BeginRow & Record<string, unknown>>(sql("x402_calls_begin"), [
      id,
      key.network,
      key.asset,
      key.payer,
      key.nonce,
      signature,
      payTo.toLowerCase(),
      route,
      maxAmount,
      now,
      options.weight,
      options.listSize ?? null,
      options.lookup ?? [],
    ]);
    this.claimed = rows.length > 0;
    if (!this.claimed) throw new PaymentAlreadyUsed();
    const [row] = rows;
    if (row.outcome === "ok") this.counted = options.weight;
    const metered: Metered = {
      keyId: "",
      accountId: "",
      accountBound: false,
      plan: "Developer",
      maxBatchSize: row.max_batch_size,
      windows: [
        { name: "minute", limit: row.limit_minute, used: row.used_minute, resetAt: resets.minute },
        { name: "day", limit: row.limit_day, used: row.used_day, resetAt: resets.day },
        { name: "month", limit: row.limit_month, used: row.used_month, resetAt: resets.month },
      ],
      available: null,
      unmetered: false,
      matched: 0,
      units: row.outcome === "ok" ? options.weight : 0,
      wallets: options.wallets ?? 0,
      route: options.route,
      identities: [],
    };
    if (row.outcome === "batch_too_large") {
      throw new ApiError(
        400,
        "BATCH_SIZE_EXCEEDED",
        `Too many addresses: ${options.listSize} sent, a call paid over x402 takes at most ${row.max_batch_size} (the Developer preset); split the list; no payment was taken`,
      );
    }
    if (row.outcome === "rate_limited") {
      const blocking = metered.windows.filter((w) => w.limit !== null && w.used + options.weight > w.limit);
      const until = Math.max(...blocking.map((w) => w.resetAt.getTime()));
      throw new ApiError(
        429,
        "RATE_LIMITED",
        `Rate limit reached for this paying wallet on the ${blocking.map((w) => w.name).join(" and ")} window (the Developer preset); no payment was taken; retry after it resets`,
        { "Retry-After": String(Math.max(1, Math.ceil((until - now.getTime()) / 1000))) },
      );
    }
    if (options.weight === 0) return metered;
    const identities: IdentityRow[] = rows.filter((r) => r.address !== null);
    metered.identities = identities;
    if (options.billMatches !== undefined) {
      metered.matched = Math.min(options.billMatches, options.billWallets?.length ?? 0);
    } else if (options.billWallets && options.billWallets.length > 0) {
      const billable = new Set(options.billWallets);
      const matched = new Set<string>();
      for (const r of identities) if ((r.kind === "twitter" || r.kind === "farcaster") && billable.has(r.address)) matched.add(r.address);
      metered.matched = matched.size;
    }
    return metered;
  }
}
