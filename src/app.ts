// createApp(deps): the whole service as a fetch(Request) => Response handler, on Web APIs only.
import type { Outbound } from "./http/outbound.ts";
import { Hono, type Context, type MiddlewareHandler } from "hono";
import "./http/context.ts";
import type { Config } from "./config.ts";
import type { Db } from "./db/types.ts";
import type { UsageRecorder } from "./ledger/usage.ts";
import { ApiError, renderError } from "./http/errors.ts";
import { meteredResponses } from "./http/request-meter.ts";
import { cacheControl, compressResponse, type Gzip } from "./http/compress.ts";
import { clientAddress } from "./http/client-address.ts";
import { etag } from "hono/etag";
import { matchedRoutes } from "hono/route";
import { incomingRequestId, type Log, type Logger } from "./observe/log.ts";
import { metrics } from "./observe/metrics.ts";
import type { Operation } from "./openapi/operation.ts";
import { createOperationDeps } from "./operations/deps.ts";
import { accountOpenapi, accountRoutes } from "./rest/account.ts";
import { batchOpenapi, batchRoutes } from "./rest/batch.ts";
import { estimateOpenapi, estimateRoutes } from "./rest/estimate.ts";
import { jobRoutes, jobsOpenapi } from "./rest/jobs.ts";
import { metricsOpenapi, metricsRoutes } from "./rest/metrics.ts";
import { connectionRoutes, oauthRoutes } from "./rest/oauth.ts";
import { connectionsOpenapi, oauthOpenapi } from "./rest/oauth-openapi.ts";
import { publicOpenapi, publicRoutes } from "./rest/public.ts";
import { reverseOpenapi, reverseRoutes } from "./rest/reverse.ts";
import { walletOpenapi, walletRoutes } from "./rest/wallet.ts";
import { webhookRoutes, webhooksOpenapi } from "./rest/webhooks.ts";
import { x402Openapi, x402Routes } from "./rest/x402.ts";
import { optOutOpenapi, optOutRoutes } from "./rest/opt-out.ts";
import type { VerifyAccessToken } from "./mcp/credentials.ts";
import { isMcpRequest, MCP_COMPRESS_THRESHOLD_BYTES, mcpOpenapi, mcpRoutes } from "./mcp/route.ts";
import { paymentServerOf, type PaymentServer } from "./x402/payment.ts";
import { createPerCallDeps, recordsWritten } from "./operations/percall.ts";
import type { LiveSource, RetryOptions } from "./sources/types.ts";
import type { OAuthDeps } from "./oauth/deps.ts";
import { verifyAccessToken } from "./oauth/grants.ts";

export interface AppDeps {
  db: Db;
  config: Config;
  now?: () => Date;
  log?: Log;
  /** Where the access line of every request goes (src/observe/log.ts); none when absent. */
  logger?: Logger;
  usage?: UsageRecorder;
  /** Live sources for jobs; by default those the configuration turns on. */
  sources?: LiveSource[];
  retry?: RetryOptions;
  /** The connection's peer address, given the runtime's second fetch argument (src/main.ts). */
  peerAddress?: (req: Request, env: unknown) => string | undefined;
  /** Verifies `wid_mcp_` OAuth access tokens for /mcp (see src/mcp/credentials.ts); by default the OAuth module's own check. */
  verifyAccessToken?: VerifyAccessToken;
  /**
   * Requests to URLs users gave us (src/http/outbound.ts), OAuth client metadata documents among
   * them: the entry point passes its runtime's. Without one, such requests are refused.
   */
  outbound?: Outbound;
  /** The x402 resource server; by default the one X402_FACILITATOR_URL and X402_PAY_TO configure. */
  payments?: PaymentServer;
  /** The runtime's own gzip for response bodies (src/main.ts on Node); CompressionStream by default. */
  gzip?: Gzip;
}

export interface App {
  /** `env`: the runtime's second fetch argument, handed to `peerAddress`. */
  fetch: (req: Request, env?: unknown) => Promise<Response>;
  /** The MCP server's check of an OAuth access token (`wid_mcp_…`). */
  verifyAccessToken: VerifyAccessToken;
  /** Writes buffered usage counters and waits for paid calls' outcome records; call before closing the database. */
  close: () => Promise<void>;
  /** The method and path of every handler mounted (hono path syntax), for checks of the document. */
  routes: Array<{ method: string; path: string }>;
}

/**
 * Every operation the app serves, in the order the document and the /docs page list them: the
 * OpenAPI entry of each route sits beside it in its face, and a new route adds its entries here
 * (one line) beside mounting its route group below.
 */
export const OPERATIONS: Operation[] = [
  ...walletOpenapi,
  ...batchOpenapi,
  ...estimateOpenapi,
  ...reverseOpenapi,
  ...jobsOpenapi,
  ...webhooksOpenapi,
  ...accountOpenapi,
  ...connectionsOpenapi,
  ...oauthOpenapi,
  ...mcpOpenapi,
  ...x402Openapi,
  ...optOutOpenapi,
  ...publicOpenapi,
  ...metricsOpenapi,
];

// Known paths and their methods, so a wrong method answers 405 rather than 404. `head`: a public
// document that HEAD serves like GET without a body; everywhere else HEAD is 405, so it never
// reaches metering (a HEAD of a metered path would otherwise run its GET and bill it).
export const ROUTES: Array<{ pattern: RegExp; methods: string[]; head?: true }> = [
  { pattern: /^\/api\/v1\/wallet\/[^/]+$/, methods: ["GET"] },
  { pattern: /^\/api\/v1\/batch$/, methods: ["POST"] },
  { pattern: /^\/api\/v1\/estimate$/, methods: ["POST"] },
  { pattern: /^\/api\/v1\/reverse\/(twitter|farcaster)\/[^/]+$/, methods: ["GET"] },
  { pattern: /^\/api\/v1\/stats$/, methods: ["GET"] },
  { pattern: /^\/api\/v1\/usage$/, methods: ["GET"] },
  { pattern: /^\/api\/v1\/openapi\.json$/, methods: ["GET"], head: true },
  { pattern: /^\/api\/v1\/jobs$/, methods: ["POST"] },
  { pattern: /^\/api\/v1\/jobs\/[^/]+$/, methods: ["GET"] },
  { pattern: /^\/api\/v1\/webhooks$/, methods: ["GET", "POST"] },
  { pattern: /^\/api\/v1\/webhooks\/[^/]+$/, methods: ["DELETE"] },
  { pattern: /^\/api\/v1\/webhooks\/[^/]+\/rotate$/, methods: ["POST"] },
  { pattern: /^\/api\/v1\/webhooks\/[^/]+\/deliveries$/, methods: ["GET"] },
  { pattern: /^\/api\/v1\/webhooks\/[^/]+\/deliveries\/[^/]+\/redeliver$/, methods: ["POST"] },
  { pattern: /^\/api\/v1\/watchlist$/, methods: ["GET", "POST", "DELETE"] },
  { pattern: /^\/healthz$/, methods: ["GET"], head: true },
  { pattern: /^\/docs$/, methods: ["GET"], head: true },
  { pattern: /^\/api\/v1\/connections$/, methods: ["GET"] },
  { pattern: /^\/api\/v1\/connections\/[^/]+$/, methods: ["DELETE"] },
  { pattern: /^\/\.well-known\/oauth-protected-resource(\/mcp)?$/, methods: ["GET"], head: true },
  { pattern: /^\/\.well-known\/oauth-authorization-server$/, methods: ["GET"], head: true },
  { pattern: /^\/api\/oauth\/(register|token|revoke)$/, methods: ["POST"] },
  { pattern: /^\/api\/oauth\/authorize$/, methods: ["GET", "POST"] },
  { pattern: /^\/mcp$/, methods: ["POST"] },
  { pattern: /^\/api\/x402\/buy$/, methods: ["POST"] },
  { pattern: /^\/api\/x402\/recover$/, methods: ["GET", "POST"] },
  { pattern: /^\/metrics$/, methods: ["GET"] },
  { pattern: /^\/api\/opt-out(\/challenge)?$/, methods: ["POST"] },
  { pattern: /^\/opt-out$/, methods: ["GET"], head: true },
  { pattern: /^\/opt-out\.js$/, methods: ["GET"], head: true },
];

/** The Allow header of a known route: its methods, HEAD where it serves one, and OPTIONS. */
export function allowOf(route: { methods: string[]; head?: true }): string {
  return [...route.methods, ...(route.head ? ["HEAD"] : []), "OPTIONS"].join(", ");
}

function methodNotAllowed(route: { methods: string[]; head?: true }, method: string): ApiError {
  return new ApiError(405, "METHOD_NOT_ALLOWED", `Method ${method} is not allowed here: use ${route.methods.join(", ")}`, {
    Allow: allowOf(route),
  });
}

/**
 * HEAD before any route runs: a public document answers like GET without a body (hono runs the
 * GET handler and drops the body); every other path is 405, free, so HEAD never meters or bills.
 */
export function headRequests(log: Log): MiddlewareHandler {
  return async (c, next) => {
    if (c.req.method !== "HEAD") return await next();
    const known = ROUTES.find((r) => r.pattern.test(c.req.path));
    if (known?.head) return await next();
    if (known) return renderError(methodNotAllowed(known, "HEAD"), c, log);
    return renderError(new ApiError(404, "NOT_FOUND", `No such endpoint: HEAD ${c.req.path}`), c, log);
  };
}

const CORS_HEADERS = {
  "Access-Control-Allow-Origin": "*",
  "Access-Control-Expose-Headers":
    "X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, RateLimit, RateLimit-Policy, Retry-After, X-Data-Staleness, X-Last-Updated, X-Request-Id, Idempotent-Replayed, WWW-Authenticate, PAYMENT-REQUIRED, PAYMENT-RESPONSE, Server-Timing",
};

/** Gives every response a request id and the open CORS headers; answers OPTIONS on any path with 204. */
export function requestIdAndCors(): MiddlewareHandler {
  return async (c, next) => {
    const requestId = incomingRequestId(c.req.raw.headers) ?? crypto.randomUUID();
    c.set("requestId", requestId);
    if (c.req.method === "OPTIONS") {
      return new Response(null, {
        status: 204,
        headers: {
          ...CORS_HEADERS,
          "Access-Control-Allow-Methods": "GET, POST, DELETE, OPTIONS",
          "Access-Control-Allow-Headers":
            c.req.header("Access-Control-Request-Headers") ??
            "Authorization, Content-Type, Idempotency-Key, PAYMENT-SIGNATURE, Access-Control-Expose-Headers",
          "Access-Control-Max-Age": "86400",
        },
      });
    }
    await next();
    for (const [name, value] of Object.entries(CORS_HEADERS)) c.res.headers.set(name, value);
    c.res.headers.set("X-Request-Id", requestId);
  };
}

/** The route template a request matched (hono syntax), never its raw path; `unmatched` for 404s. */
function routeTemplate(c: Context): string {
  // the last matched route that is not a middleware (`ALL`)
  const matched = matchedRoutes(c);
  for (let i = matched.length - 1; i >= 0; i--) if (matched[i].method !== "ALL") return matched[i].path;
  return "unmatched";
}

/**
 * Server-Timing on a call paid over x402: `facilitator`, its round trips to the facilitator, and
 * `service`, the rest of its time in this app, from the first middleware to the last.
 */
export function serverTiming(): MiddlewareHandler {
  return async (c, next) => {
    const started = performance.now();
    await next();
    const facilitatorMs = c.get("facilitatorMs");
    if (facilitatorMs === undefined) return;
    const serviceMs = performance.now() - started - facilitatorMs;
    c.res.headers.set("Server-Timing", `facilitator;dur=${facilitatorMs.toFixed(2)}, service;dur=${serviceMs.toFixed(2)}`);
  };
}

/** Counts and times every request for /metrics (unless `count` is off), and writes its access line. */
export function observeRequests(logger: Logger | undefined, count: boolean): MiddlewareHandler {
  const access = logger?.enabled("info") ? logger : undefined;
  const series = requestSeries();
  return async (c, next) => {
    if (!count && !access) return await next();
    const started = performance.now();
    await next();
    const ms = performance.now() - started;
    const m = c.get("meter");
    const route = routeTemplate(c);
    const method = c.req.method;
    const status = c.res.status;
    if (count) series(route, method, status, ms / 1000);
    if (access) {
      const errorCode = c.get("errorCode");
      access.access({
        request_id: c.get("requestId") ?? "",
        method,
        route,
        status,
        duration_ms: Math.round(ms * 100) / 100,
        account_id: m?.accountId,
        units: m?.units,
        matches: m?.matched,
        outcome: errorCode ?? (status < 400 ? "ok" : String(status)),
      });
    }
  };
}

/**
 * The request counter and latency histogram of one (route, method, status), looked up through
 * nested maps: the labels are a handful of templates, methods and statuses, and this runs on
 * every request, so no label object or key string is built once a combination has been seen.
 */
function requestSeries(): (route: string, method: string, status: number, seconds: number) => void {
  type Entry = { count: () => void; observe: (seconds: number) => void };
  const byRoute = new Map<string, Map<string, Map<number, Entry>>>();
  return (route, method, status, seconds) => {
    let byMethod = byRoute.get(route);
    if (!byMethod) byRoute.set(route, (byMethod = new Map()));
    let byStatus = byMethod.get(method);
    if (!byStatus) byMethod.set(method, (byStatus = new Map()));
    let entry = byStatus.get(status);
    if (!entry) {
      byStatus.set(status, (entry = {
        count: metrics.requests.series({ route, method, status: String(status) }),
        observe: metrics.latency.series({ route, method }),
      }));
    }
    entry.count();
    entry.observe(seconds);
  };
}

export function createApp(deps: AppDeps): App {
  const operations = createOperationDeps(deps);
  const { now, log, usage } = operations;
  const oauth: OAuthDeps = {
    db: deps.db,
    now,
    log,
    issuer: deps.config.publicUrl,
    resource: `${deps.config.publicUrl}/mcp`,
    trustedCallbackHost: deps.config.oauth.trustedCallbackHost,
    outbound: deps.outbound,
    clientAddress: (req, env) => clientAddress(req, deps.peerAddress?.(req, env), deps.config.trustProxy),
  };
  const verify: VerifyAccessToken = deps.verifyAccessToken ?? ((token) => verifyAccessToken(oauth, token));

  const app = new Hono();

  app.use(serverTiming());
  app.use(observeRequests(deps.logger, deps.config.metrics));
  app.use(requestIdAndCors());
  app.use(headRequests(log));
  // validators for the documents that change with a release, and /stats that changes once a day
  app.use("/api/v1/openapi.json", cacheControl("public, max-age=300"), etag());
  app.use("/docs", cacheControl("public, max-age=300"), etag());
  app.use("/api/v1/stats", cacheControl("private, no-cache"), etag());

  app.route("/", publicRoutes(operations, OPERATIONS));
  app.route("/", oauthRoutes(oauth));
  const payments = deps.payments ?? paymentServerOf(deps.config);
  app.route("/", x402Routes({ ...operations, payments }));
  app.route("/", optOutRoutes(operations, deps.peerAddress));

  app.route("/", metricsRoutes(operations, deps.peerAddress));
  app.route("/", mcpRoutes({ operations, verifyAccessToken: verify, peerAddress: deps.peerAddress }));

  const v1 = new Hono();
  v1.use(meteredResponses(usage, now));
  // keyless lookups paid per call over x402 when it is configured
  const paid = createPerCallDeps(operations, payments);
  v1.route("/", walletRoutes(paid));
  v1.route("/", batchRoutes(paid));
  v1.route("/", reverseRoutes(paid));
  v1.route("/", estimateRoutes(operations));
  v1.route("/", accountRoutes(operations));
  v1.route("/", connectionRoutes(operations));
  v1.route("/", jobRoutes(operations));
  v1.route("/", webhookRoutes(operations));
  app.route("/api/v1", v1);

  app.notFound((c) => {
    const known = ROUTES.find((r) => r.pattern.test(c.req.path));
    if (known) return renderError(methodNotAllowed(known, c.req.method), c, log);
    return renderError(new ApiError(404, "NOT_FOUND", `No such endpoint: ${c.req.method} ${c.req.path}`), c, log);
  });

  app.onError((err, c) => renderError(err, c, log));

  return {
    fetch: async (req: Request, env?: unknown) =>
      await compressResponse(req, await app.fetch(req, env), {
        threshold: isMcpRequest(req) ? MCP_COMPRESS_THRESHOLD_BYTES : undefined,
        gzip: deps.gzip,
      }),
    verifyAccessToken: verify,
    close: async () => {
      await recordsWritten(paid);
      await usage.flush();
    },
    routes: app.routes.filter((r) => r.method !== "ALL").map((r) => ({ method: r.method, path: r.path })),
  };
}
