// Look up a list of wallets: rate weight 1 per entry sent, 1 match credit per distinct address with
// twitter or farcaster. Faces: POST /batch; MCP walletid_resolve_wallets for a list.
import { buildViews, type WalletView } from "../index/records.ts";
import { invalidAddress } from "../http/errors.ts";
import { refusal, type Metered, type Meterer } from "../http/meter.ts";
import type { OperationDeps } from "./deps.ts";
import { outcomeOf, type Outcome } from "./outcome.ts";

export const BATCH_ROUTE = "/v1/batch";

/** A list as parsed from the wire: entries as sent, distinct lowercased addresses, malformed entries. */
export interface WalletList {
  entries: unknown[];
  unique: string[];
  /** The first few entries that are not addresses, and how many there are in all. */
  invalid: unknown[];
  invalidCount: number;
}

export interface BatchLookup {
  metered: Metered;
  views: Map<string, WalletView>;
}

/**
 * A list of addresses, metered with the rate weight of every entry and looked up in one round
 * trip; malformed entries are refused after authentication. `idempotency`: the Idempotency-Key
 * and the hash of the request's canonical form; a replay comes back in `metered.replay`.
 */
export function lookupBatch(
  deps: OperationDeps,
  meterer: Meterer,
  input: WalletList & { idempotency?: { key: string; requestHash: string } },
): Promise<Outcome<BatchLookup>> {
  return outcomeOf(async () => {
    const { entries, unique, invalid, invalidCount, idempotency } = input;
    if (invalid.length > 0) throw await refusal(meterer, BATCH_ROUTE, invalidAddress(invalid, invalidCount));
    const metered = await meterer.meter({
      route: BATCH_ROUTE,
      weight: entries.length,
      needsCredits: true,
      listSize: entries.length,
      billWallets: unique,
      wallets: entries.length,
      // a retry under the same Idempotency-Key lands on the same debit key and cannot bill twice
      callKey: idempotency ? `batch-idem:${idempotency.key}` : undefined,
      idempotency,
      lookup: unique,
    });
    const views = buildViews(metered.identities, { now: deps.now(), staleAfterDays: deps.config.staleAfterDays });
    return { metered, views };
  });
}
