// Look up one wallet: 1 rate unit, 1 match credit when it resolves to twitter or farcaster.
// Faces: GET /wallet/{address}; MCP walletid_resolve_wallets for one address.
import * as v from "valibot";
import { buildViews, type WalletView } from "../index/records.ts";
import { invalidAddress } from "../http/errors.ts";
import { refusal, type Metered, type Meterer } from "../http/meter.ts";
import { WalletParams } from "../http/schemas.ts";
import type { OperationDeps } from "./deps.ts";
import { outcomeOf, type Outcome } from "./outcome.ts";

export const WALLET_ROUTE = "/v1/wallet/{address}";

export interface WalletLookup {
  /** The address, lowercased. */
  address: string;
  /** Undefined: never seen; `found` false: checked and nothing attached. */
  view: WalletView | undefined;
  metered: Metered;
}

/**
 * One address as sent: refused after authentication when malformed (so the refusal carries the
 * rate-limit headers and costs nothing), else metered and looked up in one round trip.
 */
export function lookupWallet(deps: OperationDeps, meterer: Meterer, raw: string): Promise<Outcome<WalletLookup>> {
  return outcomeOf(async () => {
    const params = v.safeParse(WalletParams, { address: raw });
    if (!params.success) throw await refusal(meterer, WALLET_ROUTE, invalidAddress([raw]));
    const address = params.output.address.toLowerCase();
    // metering and the lookup are one round trip
    const metered = await meterer.meter({
      route: WALLET_ROUTE,
      weight: 1,
      needsCredits: true,
      billWallets: [address],
      wallets: 1,
      lookup: [address],
    });
    const view = buildViews(metered.identities, { now: deps.now(), staleAfterDays: deps.config.staleAfterDays }).get(address);
    return { address, view, metered };
  });
}
