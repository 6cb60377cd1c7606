// The one error type of the wire: {error, code} with an HTTP status; everything else is INTERNAL_ERROR.
import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";

export class ApiError extends Error {
  readonly status: ContentfulStatusCode;
  readonly code: string;
  readonly headers: Record<string, string>;

  constructor(status: ContentfulStatusCode, code: string, message: string, headers: Record<string, string> = {}) {
    super(message);
    this.status = status;
    this.code = code;
    this.headers = headers;
  }
}

// Failures of the database connection itself (not of a statement) mean "try again shortly".
const UNAVAILABLE = new Set([
  "ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "CONNECTION_CLOSED", "CONNECTION_ENDED",
  "CONNECTION_DESTROYED", "CONNECT_TIMEOUT", "57P01", "57P02", "57P03", "53300",
]);

export function isUnavailable(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === "string" && UNAVAILABLE.has(code);
}

export function errorBody(code: string, message: string) {
  return { error: message, code };
}

export function renderError(err: unknown, c: Context, log: (line: string) => void): Response {
  if (err instanceof ApiError) {
    for (const [name, value] of Object.entries(err.headers)) c.header(name, value);
    return c.json(errorBody(err.code, err.message), err.status);
  }
  const requestId = c.get("requestId") ?? "unknown";
  if (isUnavailable(err)) {
    log(`request ${requestId}: service unavailable: ${(err as Error).message}`);
    c.header("Retry-After", "5");
    return c.json(errorBody("SERVICE_UNAVAILABLE", "The service is temporarily unavailable; retry shortly"), 503);
  }
  log(`request ${requestId}: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  return c.json(errorBody("INTERNAL_ERROR", `Internal error (request ${requestId})`), 500);
}

/** INVALID_ADDRESS naming up to five of the malformed entries. */
export function invalidAddress(bad: unknown[]): ApiError {
  const shown = bad.slice(0, 5).map((v) => (typeof v === "string" ? JSON.stringify(v.slice(0, 60)) : JSON.stringify(v) ?? String(v)));
  const more = bad.length > 5 ? ` and ${bad.length - 5} more` : "";
  const subject = bad.length === 1 ? "Invalid address" : "Invalid addresses";
  return new ApiError(
    400,
    "INVALID_ADDRESS",
    `${subject} ${shown.join(", ")}${more}: an address is 0x followed by 40 hex characters`,
  );
}
