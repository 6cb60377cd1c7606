// Recovering a lost key by wallet signature: a challenge for the wallet that paid, then a new key on
// its account once the wallet has signed it. Faces: GET and POST /api/x402/recover.
import { ApiError } from "../http/errors.ts";
import { MAX_KEYS_PER_WALLET } from "../x402/purchase.ts";
import { createRecoverySigner, recoverKey, signatureVerifier, type Challenge, type RecoverySigner } from "../x402/recovery.ts";
import type { OperationDeps } from "./deps.ts";
import { outcomeOf, type Outcome } from "./outcome.ts";

export interface RecoveryDeps extends OperationDeps {
  recovery: RecoverySigner;
  /** Whether `signature` is the wallet's over `message`: EIP-191, or ERC-1271 and ERC-6492 over ETH_RPC_URL. */
  verifySignature: (params: { wallet: string; message: string; signature: string }) => Promise<boolean>;
}

export function createRecoveryDeps(deps: OperationDeps): RecoveryDeps {
  return {
    ...deps,
    recovery: createRecoverySigner(deps.db, { site: deps.config.publicUrl, configuredSecret: deps.config.cursorSecret }),
    verifySignature: signatureVerifier({ rpcUrl: deps.config.upstreams.ethRpcUrl, timeoutMs: deps.config.jobs.upstreamTimeoutMs }),
  };
}

/** The challenge a wallet signs to recover its key: valid five minutes. */
export async function recoveryChallenge(deps: RecoveryDeps, input: { wallet: string }): Promise<Challenge> {
  return await deps.recovery.issue(input.wallet.toLowerCase(), deps.now());
}

export interface RecoveredKey {
  api_key: string;
  key_prefix: string;
  revoked_prefixes: string[];
}

/**
 * A new key for the wallet that signed the challenge, on the account it paid for. At three active
 * keys only `revoke` (revoke_others_and_reissue) issues one, revoking the others.
 */
export function recoverApiKey(
  deps: RecoveryDeps,
  input: { wallet: string; issuedAt: string; token: string; signature: string; revoke: boolean },
): Promise<Outcome<RecoveredKey>> {
  return outcomeOf(async () => {
    const { issuedAt, token, signature } = input;
    const wallet = input.wallet.toLowerCase();
    const { recovery } = deps;
    const now = deps.now();
    const check = await recovery.check({ wallet, issuedAt, token, now });
    if (check === "altered") throw new ApiError(400, "INVALID_CHALLENGE", "Invalid challenge: wallet, issued_at and token must be sent back exactly as GET /api/x402/recover returned them");
    if (check === "expired") throw new ApiError(400, "INVALID_CHALLENGE", "Challenge expired: it is valid five minutes; ask GET /api/x402/recover for a new one");
    let valid: boolean;
    try {
      valid = await deps.verifySignature({ wallet, message: recovery.message(wallet, issuedAt), signature });
    } catch (err) {
      deps.log(`x402 recover: signature check over ETH_RPC_URL failed: ${err instanceof Error ? err.message : String(err)}`, "warn");
      throw new ApiError(503, "SERVICE_UNAVAILABLE", "Cannot check a smart-wallet signature now: retry shortly", { "Retry-After": "5" });
    }
    if (!valid) throw new ApiError(401, "INVALID_SIGNATURE", "Invalid signature: sign the challenge's message with the wallet's key (personal_sign), exactly as returned");
    const outcome = await recoverKey(deps.db, { wallet, token, revoke: input.revoke, now });
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
    return { api_key: outcome.apiKey, key_prefix: outcome.prefix, revoked_prefixes: outcome.revokedPrefixes };
  });
}
