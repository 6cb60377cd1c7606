// The caller's watchlist: the wallets whose identity changes it hears of as wallet.changed
// events. Free, 1 rate unit a request. Faces: REST /watchlist; MCP walletid_watch_wallets and
// walletid_unwatch_wallets.
import { ApiError, invalidAddress } from "../http/errors.ts";
import { refusal, type Metered, type Meterer } from "../http/meter.ts";
import { unwatchWallets, watchedPage, watchWallets, WATCHLIST_MAX } from "../events/watchlist.ts";
import type { OperationDeps } from "./deps.ts";
import { outcomeOf, type Outcome } from "./outcome.ts";

export const WATCHLIST_ROUTE = "/v1/watchlist";
/** Addresses one request may add or remove. */
export const WATCH_REQUEST_MAX = 1000;
export const WATCHLIST_PAGE = 100;

export interface WalletListInput {
  entries: unknown[];
  unique: string[];
  invalid: unknown[];
  invalidCount: number;
}

async function checkedList(meterer: Meterer, list: WalletListInput): Promise<string[]> {
  if (list.invalidCount > 0) throw await refusal(meterer, WATCHLIST_ROUTE, invalidAddress(list.invalid, list.invalidCount));
  if (list.entries.length === 0 || list.entries.length > WATCH_REQUEST_MAX) {
    throw await refusal(
      meterer,
      WATCHLIST_ROUTE,
      new ApiError(400, "INVALID_REQUEST", `Send 1 to ${WATCH_REQUEST_MAX} addresses in \`wallets\` (${list.entries.length} sent)`),
    );
  }
  return list.unique;
}

export function watch(
  deps: OperationDeps,
  meterer: Meterer,
  list: WalletListInput,
): Promise<Outcome<{ data: { added: number; already_watched: number; total: number }; metered: Metered }>> {
  return outcomeOf(async () => {
    const wallets = await checkedList(meterer, list);
    const metered = await meterer.meter({ route: WATCHLIST_ROUTE, weight: 1, needsCredits: false });
    const result = await watchWallets(deps.db, metered.accountId, wallets, deps.now());
    if (result.full) {
      throw new ApiError(
        400,
        "WATCHLIST_FULL",
        `A watchlist holds at most ${WATCHLIST_MAX.toLocaleString("en-US")} wallets; this one holds ${result.total}, and nothing was added: remove some first`,
      );
    }
    return { data: { added: result.added, already_watched: result.alreadyWatched, total: result.total }, metered };
  });
}

export function unwatch(
  deps: OperationDeps,
  meterer: Meterer,
  list: WalletListInput,
): Promise<Outcome<{ data: { removed: number; total: number }; metered: Metered }>> {
  return outcomeOf(async () => {
    const wallets = await checkedList(meterer, list);
    const metered = await meterer.meter({ route: WATCHLIST_ROUTE, weight: 1, needsCredits: false });
    return { data: await unwatchWallets(deps.db, metered.accountId, wallets), metered };
  });
}

export function watchlist(
  deps: OperationDeps,
  meterer: Meterer,
  after: { at: string; wallet: string } | undefined,
): Promise<Outcome<{ data: Array<{ wallet: string; added_at: string }>; total: number; next?: { at: string; wallet: string }; metered: Metered }>> {
  return outcomeOf(async () => {
    const metered = await meterer.meter({ route: WATCHLIST_ROUTE, weight: 1, needsCredits: false });
    const page = await watchedPage(deps.db, metered.accountId, after, WATCHLIST_PAGE);
    return { data: page.wallets, total: page.total, next: page.next, metered };
  });
}
