// A wallet's owner takes it out of the index (or puts it back) by signing a challenge: public,
// free, limited per client address. Faces: POST {site_url}/api/opt-out/challenge and
// POST {site_url}/api/opt-out, and the page GET {site_url}/opt-out that calls them.
import { sql } from "../db/queries.ts";
import { ApiError } from "../http/errors.ts";
import {
  applySignedRequest,
  ChainUnavailable,
  checkMessage,
  issueChallenge,
  siteDomain,
  siweVerifier,
  type Challenge,
  type OptOutAction,
} from "../index/opt-out.ts";
import type { OperationDeps } from "./deps.ts";
import { outcomeOf, type Outcome } from "./outcome.ts";

/** Requests (challenges and signed requests together) a client address may send an hour. */
export const OPT_OUT_HOURLY_LIMIT = 30;

export interface OptOutDeps extends OperationDeps {
  verify: ReturnType<typeof siweVerifier>;
  /** The start of the hour whose past hours this process last pruned from the counts. */
  prunedHour: { at: number };
}

export function createOptOutDeps(deps: OperationDeps): OptOutDeps {
  return {
    ...deps,
    verify: siweVerifier({ rpcUrl: deps.config.upstreams.ethRpcUrl, timeoutMs: deps.config.jobs.upstreamTimeoutMs }),
    prunedHour: { at: 0 },
  };
}

/** Counts this request of the client address; refuses it (429) past the hourly limit. */
async function withinLimit(deps: OptOutDeps, client: string): Promise<void> {
  const now = deps.now();
  const hour = new Date(now.getTime() - (now.getTime() % 3_600_000));
  if (hour.getTime() !== deps.prunedHour.at) {
    // once an hour per process, as the MCP limiter does: past hours are never read again
    deps.prunedHour.at = hour.getTime();
    deps.db.query(sql("mcp_hourly_requests_delete_before"), [hour]).catch((err: Error) =>
      deps.log(`opt-out limits: cannot prune past hours: ${err.message}`, "warn"),
    );
  }
  const [row] = await deps.db.query<{ count: number }>(sql("opt_out_hourly_requests_count"), [hour, client]);
  if (row.count > OPT_OUT_HOURLY_LIMIT) {
    const retryAfter = Math.max(1, Math.ceil((hour.getTime() + 3_600_000 - now.getTime()) / 1000));
    throw new ApiError(
      429,
      "RATE_LIMITED",
      `Too many opt-out requests from this address: at most ${OPT_OUT_HOURLY_LIMIT} an hour; retry after the hour turns`,
      { "Retry-After": String(retryAfter) },
    );
  }
}

/** A challenge for `wallet` (already checked to be an address) to sign. */
export function optOutChallenge(
  deps: OptOutDeps,
  input: { wallet: string; action: OptOutAction; client: string },
): Promise<Outcome<Challenge>> {
  return outcomeOf(async () => {
    await withinLimit(deps, input.client);
    return await issueChallenge(deps.db, {
      wallet: input.wallet.toLowerCase(),
      action: input.action,
      publicUrl: deps.config.publicUrl,
      now: deps.now(),
    });
  });
}

export interface OptOutResult {
  wallet: string;
  opted_out: boolean;
  effective_at: string;
}

const SIGNATURE = /^0x(?:[0-9a-fA-F]{2})+$/;

function invalidChallenge(reason: string): ApiError {
  return new ApiError(400, "INVALID_CHALLENGE", `Invalid challenge: ${reason}; ask POST /api/opt-out/challenge for a new one`);
}

/**
 * A signed challenge: checked against the one issued, the signature verified (recovery, or the
 * chain for a contract wallet), then the challenge consumed and the request applied with its
 * proof in one transaction. Effective for every later request.
 */
export function optOut(deps: OptOutDeps, input: { message: string; signature: string; client: string }): Promise<Outcome<OptOutResult>> {
  return outcomeOf(async () => {
    await withinLimit(deps, input.client);
    const now = deps.now();
    const checked = await checkMessage(deps.db, { message: input.message, publicUrl: deps.config.publicUrl, now });
    if (!checked.ok) {
      switch (checked.code) {
        case "malformed_wallet":
          throw new ApiError(400, "INVALID_ADDRESS", "Invalid wallet in the message: an address is 0x followed by 40 hex characters");
        case "unknown":
          throw invalidChallenge("this message is not one walletid issued");
        case "altered":
          throw invalidChallenge("the message must be sent back exactly as it was issued");
        case "used":
          throw invalidChallenge("this challenge was already used");
        case "expired":
          throw invalidChallenge("this challenge expired (it is valid ten minutes)");
      }
    }
    const notByWallet = new ApiError(
      401,
      "INVALID_SIGNATURE",
      "Invalid signature: sign the message with the wallet it names (personal_sign), exactly as returned",
    );
    if (!SIGNATURE.test(input.signature)) throw notByWallet;
    let valid: boolean;
    try {
      valid = await deps.verify({
        message: input.message,
        signature: input.signature,
        domain: siteDomain(deps.config.publicUrl),
        nonce: checked.nonce,
        now,
      });
    } catch (err) {
      if (!(err instanceof ChainUnavailable)) throw err;
      deps.log(`opt-out: signature check over ETH_RPC_URL failed: ${err.message}`, "warn");
      throw new ApiError(503, "SERVICE_UNAVAILABLE", "Cannot check a contract wallet's signature now: retry shortly", { "Retry-After": "5" });
    }
    if (!valid) throw notByWallet;
    const applied = await applySignedRequest(deps.db, { nonce: checked.nonce, message: input.message, signature: input.signature, now: deps.now() });
    if (!applied) throw invalidChallenge("this challenge was already used");
    return { wallet: applied.wallet, opted_out: applied.opted_out, effective_at: applied.effective_at.toISOString() };
  });
}
