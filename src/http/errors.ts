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

/**
 * A short preview of a rejected entry: strings cut to 60 characters, containers named by their
 * kind only, so that no entry, however deep or long, makes the message large or recursive.
 */
function previewEntry(entry: unknown): string {
  if (typeof entry === "string") return JSON.stringify(entry.slice(0, 60));
  if (Array.isArray(entry)) return entry.length === 0 ? "[]" : "[...]";
  if (entry !== null && typeof entry === "object") return Object.keys(entry).length === 0 ? "{}" : "{...}";
  return String(entry);
}

/** INVALID_ADDRESS naming up to five of the malformed entries, of `total` (default: those given). */
export function invalidAddress(bad: unknown[], total = bad.length): ApiError {
  const shown = bad.slice(0, 5).map(previewEntry);
  const more = total > shown.length ? ` and ${total - shown.length} more` : "";
  const subject = total === 1 ? "Invalid address" : "Invalid addresses";
  return new ApiError(
    400,
    "INVALID_ADDRESS",
    `${subject} ${shown.join(", ")}${more}: an address is 0x followed by 40 hex characters`,
  );
}
