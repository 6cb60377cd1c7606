// The one error type of the wire: {error, code} with an HTTP status; everything else is INTERNAL_ERROR.
import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { isDatabaseUnavailable } from "../db/errors.ts";
import type { Log } from "../observe/log.ts";

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

export function errorBody(code: string, message: string) {
  return { error: message, code };
}

export function renderError(err: unknown, c: Context, log: Log): Response {
  if (err instanceof ApiError) {
    c.set("errorCode", err.code);
    for (const [name, value] of Object.entries(err.headers)) c.header(name, value);
    return c.json(errorBody(err.code, err.message), err.status);
  }
  const requestId = c.get("requestId") ?? "unknown";
  if (isDatabaseUnavailable(err)) {
    c.set("errorCode", "SERVICE_UNAVAILABLE");
    log(`request ${requestId}: service unavailable: ${(err as Error).message}`, "warn", { request_id: requestId });
    c.header("Retry-After", "5");
    return c.json(errorBody("SERVICE_UNAVAILABLE", "The service is temporarily unavailable; retry shortly"), 503);
  }
  c.set("errorCode", "INTERNAL_ERROR");
  log(`request ${requestId}: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`, "error", { request_id: requestId });
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

/**
 * The raw HTTP/1.1 answer to a request the runtime's parser refused before the app saw it
 * (Node's `clientError`, keyed by its error code): 431 when the headers (the URL among them)
 * exceed the parser's limit, 408 when the request took too long to arrive, 400 otherwise.
 */
export function parserRefusal(parserCode: string | undefined): string {
  const [status, reason, code, message] =
    parserCode === "HPE_HEADER_OVERFLOW"
      ? [431, "Request Header Fields Too Large", "HEADERS_TOO_LARGE", "Cannot read the request: its headers and URL exceed 16 KiB"]
      : parserCode === "ERR_HTTP_REQUEST_TIMEOUT"
        ? [408, "Request Timeout", "REQUEST_TIMEOUT", "Cannot read the request: it did not arrive in time"]
        : [400, "Bad Request", "INVALID_REQUEST", "Cannot parse the HTTP request: it is not valid HTTP/1.1"];
  const body = JSON.stringify(errorBody(code, message));
  return [
    `HTTP/1.1 ${status} ${reason}`,
    "Content-Type: application/json",
    `Content-Length: ${new TextEncoder().encode(body).length}`,
    "Access-Control-Allow-Origin: *",
    "Connection: close",
    "",
    body,
  ].join("\r\n");
}
