// POST {site_url}/api/opt-out/challenge and POST {site_url}/api/opt-out (a wallet's owner takes
// it out of the index, or restores it, by signature), and the page GET {site_url}/opt-out with
// its script. Public and free; bodies are bare JSON objects; errors are {error, code}.
import { Hono } from "hono";
import * as v from "valibot";
import type { Config } from "../config.ts";
import { readAtMost, tooLarge } from "../http/body.ts";
import { clientAddress } from "../http/client-address.ts";
import { ApiError } from "../http/errors.ts";
import { Address } from "../index/address.ts";
import type { Operation } from "../openapi/operation.ts";
import type { OperationDeps } from "../operations/deps.ts";
import { createOptOutDeps, optOut, optOutChallenge, OPT_OUT_HOURLY_LIMIT } from "../operations/opt-out.ts";
import { OPT_OUT_PAGE, OPT_OUT_SCRIPT } from "./opt-out-page.ts";

const BODY_LIMIT = 32 * 1024;

const Action = v.pipe(
  v.picklist(["remove", "restore"]),
  v.description("remove (the default) takes the wallet out of every answer; restore shows it again"),
);

export const ChallengeBody = v.strictObject({
  wallet: v.pipe(Address, v.description("The wallet to take out (or restore); it must sign the message")),
  action: v.optional(Action),
});

export const ChallengeResponse = v.strictObject({
  message: v.pipe(
    v.string(),
    v.description("An EIP-4361 (Sign-In with Ethereum) message: this site's domain and URI, chain id 1, a single-use nonce and a statement of what signing does. Sign it exactly as returned with personal_sign"),
  ),
  expires_at: v.pipe(v.string(), v.isoTimestamp(), v.description("The challenge works until then (ten minutes), once")),
});

export const OptOutBody = v.strictObject({
  message: v.pipe(v.string(), v.maxLength(4096), v.description("The challenge's message, exactly as returned")),
  signature: v.pipe(
    v.string(),
    v.maxLength(20_000),
    v.description("The wallet's personal_sign (EIP-191) signature over the message, hex; a contract wallet's ERC-1271 or ERC-6492 signature when the server has ETH_RPC_URL"),
  ),
});

export const OptOutResponse = v.strictObject({
  wallet: v.pipe(v.string(), v.description("The wallet, lowercased")),
  opted_out: v.pipe(v.boolean(), v.description("true after remove: every lookup answers the wallet as never seen; false after restore")),
  effective_at: v.pipe(v.string(), v.isoTimestamp(), v.description("Since when (the first opt-out's time, when the wallet was already out)")),
});

const PAGE_HEADERS = {
  "Content-Security-Policy":
    "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'unsafe-inline'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'",
  "X-Frame-Options": "DENY",
  "Referrer-Policy": "no-referrer",
};

async function readJson(req: Request): Promise<unknown> {
  const text = new TextDecoder().decode((await readAtMost(req, BODY_LIMIT)) ?? tooLarge("32 KB"));
  try {
    return JSON.parse(text);
  } catch {
    throw new ApiError(400, "INVALID_REQUEST", "Request body is not valid JSON");
  }
}

export function optOutRoutes(deps: OperationDeps, peerAddress?: (req: Request, env: unknown) => string | undefined) {
  const app = new Hono();
  const optOuts = createOptOutDeps(deps);
  const config: Config = deps.config;
  const client = (req: Request, env: unknown) => clientAddress(req, peerAddress?.(req, env), config.trustProxy);

  app.post("/api/opt-out/challenge", async (c) => {
    const parsed = await readJson(c.req.raw);
    const result = v.safeParse(ChallengeBody, parsed);
    if (!result.success) {
      const wallet = parsed !== null && typeof parsed === "object" ? (parsed as { wallet?: unknown }).wallet : undefined;
      if (wallet !== undefined && !v.is(Address, wallet)) {
        throw new ApiError(400, "INVALID_ADDRESS", "Invalid wallet: an address is 0x followed by 40 hex characters");
      }
      throw new ApiError(400, "INVALID_REQUEST", "Challenge body must be {wallet} with an optional action, remove or restore");
    }
    const issued = await optOutChallenge(optOuts, {
      wallet: result.output.wallet,
      action: result.output.action ?? "remove",
      client: client(c.req.raw, c.env),
    });
    if (!issued.ok) throw issued.refusal;
    c.header("Cache-Control", "no-store");
    return c.json({ message: issued.message, expires_at: issued.expires_at });
  });

  app.post("/api/opt-out", async (c) => {
    const result = v.safeParse(OptOutBody, await readJson(c.req.raw));
    if (!result.success) throw new ApiError(400, "INVALID_REQUEST", "Opt-out body must be {message, signature}, strings as the challenge and the wallet gave them");
    const done = await optOut(optOuts, { ...result.output, client: client(c.req.raw, c.env) });
    if (!done.ok) throw done.refusal;
    return c.json({ wallet: done.wallet, opted_out: done.opted_out, effective_at: done.effective_at });
  });

  app.get("/opt-out", (c) => c.html(OPT_OUT_PAGE, 200, PAGE_HEADERS));

  app.get("/opt-out.js", (c) => {
    c.header("Content-Type", "text/javascript; charset=utf-8");
    c.header("Cache-Control", "public, max-age=300");
    c.header("X-Content-Type-Options", "nosniff");
    return c.body(OPT_OUT_SCRIPT);
  });

  return app;
}

const LIMIT = `Public and free, at most ${OPT_OUT_HOURLY_LIMIT} opt-out requests (challenges and signed requests together) an hour per client address (429 RATE_LIMITED with Retry-After beyond).`;

export const optOutOpenapi: Operation[] = [
  {
    method: "post",
    path: "/api/opt-out/challenge",
    site: true,
    operationId: "optOutChallenge",
    tag: "Opt-out",
    summary: "Challenge for taking a wallet out of the index",
    description:
      "An EIP-4361 (Sign-In with Ethereum) message for the wallet to sign: this site's domain and URI, chain id 1, a single-use nonce, an expiry ten minutes ahead and a statement of what the action does. " +
      "`action` is `remove` (the default) or `restore`. " +
      LIMIT,
    auth: false,
    body: ChallengeBody,
    success: { status: 200, description: "The message to sign", schema: ChallengeResponse },
    errors: [
      { status: 400, codes: ["INVALID_REQUEST", "INVALID_ADDRESS"] },
      { status: 413, codes: ["INVALID_REQUEST"] },
      { status: 429, codes: ["RATE_LIMITED"], headers: ["Retry-After"] },
      { status: 503, codes: ["SERVICE_UNAVAILABLE"] },
    ],
  },
  {
    method: "post",
    path: "/api/opt-out",
    site: true,
    operationId: "optOut",
    tag: "Opt-out",
    summary: "Take a wallet out of the index (or restore it) by signature",
    description:
      "Send back the challenge's message with the wallet's personal_sign signature over it. After `remove`, from the next request on, every caller and every surface (lookups, batches, estimates, jobs, reverse pages and their counts, MCP tools, watchlist events, /stats after its next materialization) answers the wallet exactly as a wallet never seen, and never bills it; later imports keep its observations without showing them. `restore` undoes it. " +
      "A challenge works once. Ordinary accounts are checked by ECDSA recovery; contract wallets (ERC-1271, ERC-6492) when the server has ETH_RPC_URL. The message, the signature and the time are kept as the proof of the request. " +
      LIMIT,
    auth: false,
    body: OptOutBody,
    success: { status: 200, description: "The wallet's standing now", schema: OptOutResponse },
    errors: [
      { status: 400, codes: ["INVALID_REQUEST", "INVALID_CHALLENGE", "INVALID_ADDRESS"] },
      { status: 401, codes: ["INVALID_SIGNATURE"], description: "The signature is not the wallet's" },
      { status: 413, codes: ["INVALID_REQUEST"] },
      { status: 429, codes: ["RATE_LIMITED"], headers: ["Retry-After"] },
      { status: 503, codes: ["SERVICE_UNAVAILABLE"] },
    ],
  },
  {
    method: "get",
    path: "/opt-out",
    site: true,
    head: true,
    operationId: "optOutPage",
    tag: "Opt-out",
    summary: "Opt-out page for people",
    description:
      "An HTML page on which a person connects a browser wallet (EIP-1193 `window.ethereum`), signs the challenge with personal_sign and sees the result. Its only script, `/opt-out.js`, is served by the service itself.",
    auth: false,
    success: { status: 200, description: "An HTML page", html: true },
    errors: [],
  },
  {
    method: "get",
    path: "/opt-out.js",
    site: true,
    head: true,
    operationId: "optOutScript",
    tag: "Opt-out",
    summary: "The opt-out page's script",
    description: "The one script of the opt-out page (`text/javascript`): it asks the browser wallet for its account and a personal_sign signature, and calls the two endpoints above. No dependencies, nothing loaded from elsewhere.",
    auth: false,
    success: { status: 200, description: "JavaScript", text: true },
    errors: [],
  },
];
