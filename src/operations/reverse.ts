// Reverse lookups: the wallets holding a twitter handle or attested to a farcaster username, 100 a
// page, 1 match credit per wallet returned, rate weight 2. Faces: GET /reverse/*; MCP walletid_reverse_*.
import * as v from "valibot";
import { buildViews, identityColumns, identityRowAt, type IdentityRow, type WalletView } from "../index/records.ts";
import { sql } from "../db/queries.ts";
import { columnsAt, memoColumns } from "../db/columns.ts";
import { ApiError } from "../http/errors.ts";
import type { CursorPosition } from "../http/cursor.ts";
import { refusal, type Metered, type Meterer } from "../http/meter.ts";
import { afterPendingWork } from "../http/turn.ts";
import { ReverseFarcasterParams, ReverseTwitterParams } from "../http/schemas.ts";
import type { OperationDeps } from "./deps.ts";
import { outcomeOf, type Outcome } from "./outcome.ts";

export const REVERSE_TWITTER_ROUTE = "/v1/reverse/twitter/{handle}";
export const REVERSE_FARCASTER_ROUTE = "/v1/reverse/farcaster/{username}";

export const REVERSE_PAGE_SIZE = 100;

// before every real position: ranks are at least -2^31 and addresses sort after ""
const FIRST_PAGE = { rank: -2_147_483_648, wallet: "" };

interface Lookup {
  kind: CursorPosition["kind"];
  key: string;
  route: string;
}

const PAGE = "reverse_entries_select_page";

/** Where the page statement puts its own columns, and the identity columns after them; looked up once. */
const pageColumns = memoColumns((names) => ({
  ...columnsAt(names, ["total_count", "account_bound", "entry", "rank"] as const, PAGE),
  identity: identityColumns(names, PAGE),
}));

/** One page of a reverse lookup: the wallets' views in page order, the page meta, and the metering. */
export interface ReversePage {
  views: WalletView[];
  meta: Record<string, unknown>;
  metered: Metered;
}

async function reversePage(deps: OperationDeps, meterer: Meterer, lookup: Lookup, cursor: string | undefined): Promise<ReversePage> {
  let after: { rank: number; wallet: string } = FIRST_PAGE;
  if (cursor !== undefined) {
    try {
      after = await deps.cursors.open(cursor, lookup);
    } catch (err) {
      throw err instanceof ApiError ? await refusal(meterer, lookup.route, err) : err;
    }
  }

  // a page is a few hundred rows of 19 columns: read as arrays (Db.queryArrays)
  const { columns, rows } = await deps.db.queryArrays(sql(PAGE), [
    lookup.kind,
    lookup.key,
    after.rank,
    after.wallet,
    REVERSE_PAGE_SIZE + 1,
    await meterer.digest(),
  ]);
  const at = pageColumns(columns);
  const first = rows[0];
  // a key bought by payment without an account: refused before anything is counted or billed
  if (lookup.kind === "farcaster" && first[at.account_bound] === false) {
    throw new ApiError(
      403,
      "ACCOUNT_REQUIRED",
      "Reverse farcaster lookups need a key that belongs to an account: keys bought by payment alone cannot use them",
    );
  }
  // the entries in page order (a wallet's identity rows are adjacent), and the identity rows
  const entries: Array<{ wallet: string; rank: number }> = [];
  const identities: IdentityRow[] = [];
  for (const r of rows) {
    const entry = r[at.entry] as string | null;
    if (entry === null) continue;
    if (entries.at(-1)?.wallet !== entry) entries.push({ wallet: entry, rank: r[at.rank] as number });
    if (r[at.identity.address] != null) identities.push(identityRowAt(r, at.identity));
  }
  const page = entries.slice(0, REVERSE_PAGE_SIZE);
  const wallets = page.map((r) => r.wallet);
  const truncated = entries.length > REVERSE_PAGE_SIZE;
  const last = page.at(-1);
  // the next cursor is signed while the page is metered; a refused page drops it unread
  const nextCursor =
    truncated && last ? deps.cursors.sign({ kind: lookup.kind, key: lookup.key, rank: last.rank, wallet: last.wallet }) : null;
  nextCursor?.catch(() => {});

  // every wallet of the page holds a twitter or farcaster identity: one credit each. The identity
  // rows were read with the page (for its wallets only, not the extra entry), so the metering
  // statement reads none, and the billable wallets are counted from them, as of the rows the page
  // shows, instead of by probing links again
  const billable = new Set<string>();
  for (const row of identities) if (row.kind === "twitter" || row.kind === "farcaster") billable.add(row.address);
  const metering = meterer.meter({
    route: lookup.route,
    weight: 2,
    needsCredits: true,
    billWallets: wallets,
    billMatches: billable.size,
    wallets: wallets.length,
  });
  metering.catch(() => {});
  // the views are built while the metering statement runs (a refused page drops them): once the
  // statement has been handed to the driver, a few promise turns from here
  await afterPendingWork();
  const found = buildViews(identities, {
    now: deps.now(),
    staleAfterDays: deps.config.staleAfterDays,
    prefer: { [lookup.kind]: lookup.key },
  });
  const views = wallets.flatMap((w) => {
    const view = found.get(w);
    return view && view.found ? [view] : [];
  });
  const metered = await metering;
  return {
    views,
    meta: {
      [lookup.kind === "twitter" ? "handle" : "username"]: lookup.key,
      total_count: first[at.total_count] as number,
      returned_count: views.length,
      truncated,
      next_cursor: await nextCursor,
    },
    metered,
  };
}

/**
 * The wallets holding a twitter handle, through any evidence route: the handle as sent (an @ is
 * dropped; a malformed one is refused after authentication) and the cursor of the page.
 */
export function reverseTwitter(
  deps: OperationDeps,
  meterer: Meterer,
  input: { handle: string; cursor?: string },
): Promise<Outcome<ReversePage>> {
  return outcomeOf(async () => {
    const params = v.safeParse(ReverseTwitterParams, { handle: input.handle });
    if (!params.success) {
      throw await refusal(meterer, REVERSE_TWITTER_ROUTE, new ApiError(400, "INVALID_HANDLE", params.issues[0].message));
    }
    const handle = params.output.handle.replace(/^@/, "").toLowerCase();
    return await reversePage(deps, meterer, { kind: "twitter", key: handle, route: REVERSE_TWITTER_ROUTE }, input.cursor);
  });
}

/** The wallets attested to a farcaster username: owner-attested wallets only; needs an account-bound key. */
export function reverseFarcaster(
  deps: OperationDeps,
  meterer: Meterer,
  input: { username: string; cursor?: string },
): Promise<Outcome<ReversePage>> {
  return outcomeOf(async () => {
    const params = v.safeParse(ReverseFarcasterParams, { username: input.username });
    if (!params.success) {
      throw await refusal(meterer, REVERSE_FARCASTER_ROUTE, new ApiError(400, "INVALID_USERNAME", params.issues[0].message));
    }
    const username = params.output.username.toLowerCase();
    return await reversePage(deps, meterer, { kind: "farcaster", key: username, route: REVERSE_FARCASTER_ROUTE }, input.cursor);
  });
}
