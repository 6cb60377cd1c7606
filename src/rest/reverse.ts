// GET /reverse/twitter/{handle} and /reverse/farcaster/{username}: the wallets holding an
// identity, 100 a page in keyset order, 1 match credit per wallet returned, rate weight 2.
import { Hono, type Context } from "hono";
import * as v from "valibot";
import { requestMeterer } from "../http/request-meter.ts";
import { reverseRowJson } from "../http/render.ts";
import {
  ReverseFarcasterParams,
  ReverseFarcasterResponse,
  ReverseQuery,
  ReverseTwitterParams,
  ReverseTwitterResponse,
} from "../http/schemas.ts";
import type { Operation } from "../openapi/operation.ts";
import { meterDeps, type OperationDeps } from "../operations/deps.ts";
import type { Outcome } from "../operations/outcome.ts";
import { REVERSE_PAGE_SIZE, REVERSE_TWITTER_ROUTE, reverseFarcaster, reverseTwitter, type ReversePage } from "../operations/reverse.ts";
import type { PerCallDeps } from "../operations/percall.ts";
import { ApiError } from "../http/errors.ts";
import { answerPaid, paysPerCall, type PaidRoute } from "./paid.ts";

const PAGING =
  "At most 100 wallets a page, ordered by the farcaster follower count of the account the row shows, descending (wallets without a count last), then by address. Pages are keyset positions, not snapshots: pass `meta.next_cursor` back unmodified until it is null; a cursor this API did not issue for this lookup is 400 INVALID_CURSOR, never page one.";

export const reverseOpenapi: Operation[] = [
  {
    method: "get",
    path: "/reverse/twitter/{handle}",
    operationId: "reverseTwitter",
    tag: "Reverse lookups",
    summary: "Wallets holding a twitter handle",
    description: `Every wallet the index links to the handle, through any evidence route; each row's \`sources\` says what backs it and \`twitter\` shows the handle asked for. ${PAGING} Cost: 1 match credit per wallet returned; rate weight 2. Without Authorization, on a server with x402 configured: paid per call (x402 \`upto\`, see \`x-payment-info\`): the call answers 402 with a challenge for its ceiling, and the paid retry settles only the matches the answer bills (a miss costs nothing), limited per paying wallet as the Developer preset.`,
    auth: true,
    paidPerCall: { maxMatches: 100 },
    params: ReverseTwitterParams,
    query: ReverseQuery,
    success: { status: 200, description: "One page of wallets; data is [] when nobody holds the handle", schema: ReverseTwitterResponse },
    errors: [
      { status: 400, codes: ["INVALID_HANDLE", "INVALID_CURSOR"] },
      {
        status: 402,
        codes: ["NO_CREDITS", "PAYMENT_REQUIRED"],
        headers: ["PAYMENT-REQUIRED", "PAYMENT-RESPONSE"],
        description: "No match credits left on the key's account (NO_CREDITS); or, with no Authorization on a server with x402 configured, payment required per call (PAYMENT_REQUIRED: the x402 `upto` challenge in PAYMENT-REQUIRED; after a refused payment, the reason in the body and PAYMENT-RESPONSE)",
      },
    ],
  },
  {
    method: "get",
    path: "/reverse/farcaster/{username}",
    operationId: "reverseFarcaster",
    tag: "Reverse lookups",
    summary: "Wallets attested to a farcaster username",
    description: `Only wallets whose every recorded source is owner-attested evidence (onchain, farcaster verification, owner-signed link, manual review): a wallet with a correlated or unclassified source beside its attested link is left out of the page and the total. Needs a key that belongs to an account. ${PAGING} Cost: 1 match credit per wallet returned; rate weight 2.`,
    auth: true,
    params: ReverseFarcasterParams,
    query: ReverseQuery,
    success: { status: 200, description: "One page of wallets; data is [] when no wallet qualifies", schema: ReverseFarcasterResponse },
    errors: [
      { status: 400, codes: ["INVALID_USERNAME", "INVALID_CURSOR"] },
      { status: 402, codes: ["NO_CREDITS"] },
      { status: 403, codes: ["ACCOUNT_REQUIRED"] },
    ],
  },
];
/** GET /reverse/twitter/{handle} paid per call: one match per wallet of the page. */
export const reverseTwitterPaidRoute: PaidRoute = {
  method: "GET",
  pattern: "/reverse/twitter/:handle",
  description: "walletid: the wallets holding a twitter handle, 100 a page; billed per wallet returned",
  discovery: {
    pathParams: { handle: "vitalikbuterin" },
    pathParamsSchema: { properties: { handle: { type: "string", pattern: "^@?[A-Za-z0-9_]{1,15}$" } }, required: ["handle"] },
    input: { cursor: "" },
    inputSchema: { properties: { cursor: { type: "string", description: "meta.next_cursor of the previous page" } } },
    output: {
      example: {
        data: [{ wallet: "0xd8da6bf26964af9d7eed9e03e53415d37aa96045", twitter: { handle: "vitalikbuterin" } }],
        meta: { handle: "vitalikbuterin", total_count: 1, returned_count: 1, truncated: false, next_cursor: null },
      },
    },
  },
};

export function reverseRoutes(deps: PerCallDeps) {
  const app = new Hono();
  const respond = (c: Context, page: Outcome<ReversePage>) => {
    if (!page.ok) throw page.refusal;
    return c.json({ data: page.views.map(reverseRowJson), meta: page.meta });
  };

  app.get("/reverse/twitter/:handle", async (c) => {
    const { cursor } = v.parse(ReverseQuery, { cursor: c.req.query("cursor") });
    if (paysPerCall(c, deps)) {
      // a malformed handle is refused before any challenge: nobody signs for a 400
      const handle = v.safeParse(ReverseTwitterParams, { handle: c.req.param("handle") });
      if (!handle.success) throw new ApiError(400, "INVALID_HANDLE", handle.issues[0].message);
      return await answerPaid(
        c,
        deps,
        reverseTwitterPaidRoute,
        {
          route: REVERSE_TWITTER_ROUTE,
          maxMatches: REVERSE_PAGE_SIZE,
          run: (meterer) => reverseTwitter(deps, meterer, { handle: c.req.param("handle"), cursor }),
          billed: (page) => page.metered.matched,
        },
        (page) => c.json({ data: page.views.map(reverseRowJson), meta: page.meta }),
      );
    }
    return respond(c, await reverseTwitter(deps, requestMeterer(c, meterDeps(deps)), { handle: c.req.param("handle"), cursor }));
  });

  app.get("/reverse/farcaster/:username", async (c) => {
    const { cursor } = v.parse(ReverseQuery, { cursor: c.req.query("cursor") });
    if (paysPerCall(c, deps)) {
      // as for keys bought by payment alone: attested wallets by username need an account
      throw new ApiError(403, "ACCOUNT_REQUIRED", "Reverse farcaster lookups need a key that belongs to an account: they cannot be paid per call");
    }
    return respond(c, await reverseFarcaster(deps, requestMeterer(c, meterDeps(deps)), { username: c.req.param("username"), cursor }));
  });

  return app;
}
