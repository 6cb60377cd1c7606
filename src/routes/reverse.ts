// GET /reverse/twitter/{handle} and /reverse/farcaster/{username}: the wallets holding an
// identity, 100 a page in keyset order, 1 match credit per wallet returned, rate weight 2.
import { Hono, type Context } from "hono";
import { buildViews } from "../index/records.ts";
import { sql } from "../db/queries.ts";
import { isApiKeyShape } from "../ledger/keys.ts";
import { ApiError } from "../http/errors.ts";
import type { CursorPosition } from "../http/cursor.ts";
import { credentialOf, keyDigest, meter } from "../http/meter.ts";
import { reverseRowJson } from "../http/render.ts";
import { meterDeps, type RouteDeps } from "./deps.ts";

export const REVERSE_TWITTER_ROUTE = "/v1/reverse/twitter/{handle}";
export const REVERSE_FARCASTER_ROUTE = "/v1/reverse/farcaster/{username}";

export const REVERSE_PAGE_SIZE = 100;
const HANDLE = /^@?([A-Za-z0-9_]{1,15})$/;
const USERNAME = /^[a-z0-9][a-z0-9.-]{0,31}$/;
// before every real position: ranks are at least -2^31 and addresses sort after ""
const FIRST_PAGE = { rank: -2_147_483_648, wallet: "" };

interface Lookup {
  kind: CursorPosition["kind"];
  key: string;
  route: string;
}

interface PageRow {
  total_count: number;
  account_bound: boolean | null;
  wallet: string | null;
  rank: number | null;
}

/** Authenticates without cost, so a refused request still carries the rate-limit headers. */
async function refuse(c: Context, deps: RouteDeps, route: string, error: ApiError): Promise<never> {
  await meter(c, meterDeps(deps), { route, weight: 0, needsCredits: false });
  throw error;
}

async function reversePage(c: Context, deps: RouteDeps, lookup: Lookup): Promise<Response> {
  const cursor = c.req.query("cursor");
  let after: { rank: number; wallet: string } = FIRST_PAGE;
  if (cursor !== undefined) {
    try {
      after = await deps.cursors.open(cursor, lookup);
    } catch (err) {
      if (err instanceof ApiError) await refuse(c, deps, lookup.route, err);
      throw err;
    }
  }

  const credential = credentialOf(c.req.raw);
  const digest = credential && isApiKeyShape(credential) ? await keyDigest(credential) : null;
  const rows = await deps.db.query<PageRow & Record<string, unknown>>(sql("reverse_entries_select_page"), [
    lookup.kind,
    lookup.key,
    after.rank,
    after.wallet,
    REVERSE_PAGE_SIZE + 1,
    digest,
  ]);
  // a key bought by payment without an account: refused before anything is counted or billed
  if (lookup.kind === "farcaster" && rows[0].account_bound === false) {
    throw new ApiError(
      403,
      "ACCOUNT_REQUIRED",
      "Reverse farcaster lookups need a key that belongs to an account: keys bought by payment alone cannot use them",
    );
  }
  const entries = rows.filter((r) => r.wallet !== null) as Array<PageRow & { wallet: string; rank: number }>;
  const page = entries.slice(0, REVERSE_PAGE_SIZE);
  const wallets = page.map((r) => r.wallet);

  // every wallet of the page holds a twitter or farcaster identity: one credit each
  const metered = await meter(c, meterDeps(deps), {
    route: lookup.route,
    weight: 2,
    needsCredits: true,
    billWallets: wallets,
    wallets: wallets.length,
    lookup: wallets,
  });
  const views = buildViews(metered.identities, {
    now: deps.now(),
    staleAfterDays: deps.config.staleAfterDays,
    prefer: { [lookup.kind]: lookup.key },
  });
  const data = wallets.flatMap((w) => {
    const view = views.get(w);
    return view && view.found ? [reverseRowJson(view)] : [];
  });
  const truncated = entries.length > REVERSE_PAGE_SIZE;
  const last = page.at(-1);
  const nextCursor =
    truncated && last ? await deps.cursors.sign({ kind: lookup.kind, key: lookup.key, rank: last.rank, wallet: last.wallet }) : null;
  return c.json({
    data,
    meta: {
      [lookup.kind === "twitter" ? "handle" : "username"]: lookup.key,
      total_count: rows[0].total_count,
      returned_count: data.length,
      truncated,
      next_cursor: nextCursor,
    },
  });
}

export function reverseRoutes(deps: RouteDeps) {
  const app = new Hono();

  app.get("/reverse/twitter/:handle", async (c) => {
    const match = HANDLE.exec(c.req.param("handle"));
    if (!match) {
      await refuse(
        c,
        deps,
        REVERSE_TWITTER_ROUTE,
        new ApiError(400, "INVALID_HANDLE", "Invalid twitter handle: expected 1 to 15 alphanumeric characters or underscores, with or without a leading @"),
      );
    }
    return await reversePage(c, deps, { kind: "twitter", key: match![1].toLowerCase(), route: REVERSE_TWITTER_ROUTE });
  });

  app.get("/reverse/farcaster/:username", async (c) => {
    const username = c.req.param("username").toLowerCase();
    if (!USERNAME.test(username)) {
      await refuse(
        c,
        deps,
        REVERSE_FARCASTER_ROUTE,
        new ApiError(
          400,
          "INVALID_USERNAME",
          "Invalid farcaster username: expected 1 to 32 letters, digits, dots or hyphens, starting with a letter or digit",
        ),
      );
    }
    return await reversePage(c, deps, { kind: "farcaster", key: username, route: REVERSE_FARCASTER_ROUTE });
  });

  return app;
}
