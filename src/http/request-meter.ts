// The metering of a REST request: its Authorization header is the credential, the outcome is kept
// on the hono context, and a middleware adds the rate-limit headers and records the usage.
import type { Context, MiddlewareHandler } from "hono";
import { isApiKeyShape } from "../ledger/keys.ts";
import type { UsageRecorder } from "../ledger/usage.ts";
import { metrics } from "../observe/metrics.ts";
import {
  credentialOf,
  keyDigest,
  meterKey,
  rateLimitHeaders,
  recordUsage,
  UNAUTHORIZED,
  type MeterDeps,
  type Metered,
  type Meterer,
  type MeterOptions,
} from "./meter.ts";
import "./context.ts";

/** Meters a request on the key in its Authorization header; a request without a usable key is 401. */
async function meter(c: Context, deps: MeterDeps, options: MeterOptions): Promise<Metered> {
  const credential = credentialOf(c.req.raw);
  if (!credential || !isApiKeyShape(credential)) {
    metrics.metering.inc({ outcome: "unauthorized" });
    throw UNAUTHORIZED(Boolean(credential));
  }
  return await meterKey(deps, await keyDigest(credential), options, (m) => c.set("meter", m));
}

/**
 * The Meterer of a REST request: its Authorization header, results kept on the context. A class
 * rather than an object of two closures: under tsx (`npm start`) every closure made per request
 * is also given its name by esbuild's keepNames, a property definition each.
 */
class RequestMeterer implements Meterer {
  constructor(
    private readonly c: Context,
    private readonly deps: MeterDeps,
  ) {}

  async digest(): Promise<string | null> {
    const credential = credentialOf(this.c.req.raw);
    return credential && isApiKeyShape(credential) ? await keyDigest(credential) : null;
  }

  meter(options: MeterOptions): Promise<Metered> {
    return meter(this.c, this.deps, options);
  }
}

export function requestMeterer(c: Context, deps: MeterDeps): Meterer {
  return new RequestMeterer(c, deps);
}

/** Adds the rate-limit headers to authenticated responses and counts their usage. */
export function meteredResponses(usage: UsageRecorder, now: () => Date): MiddlewareHandler {
  return async (c, next) => {
    const started = performance.now();
    await next();
    const m = c.get("meter") as Metered | undefined;
    if (!m) return;
    const headers = rateLimitHeaders(m, now());
    if (headers) for (const [name, value] of Object.entries(headers)) c.res.headers.set(name, value);
    recordUsage(usage, m, { status: c.res.status, latencyMs: performance.now() - started, at: now() });
  };
}
